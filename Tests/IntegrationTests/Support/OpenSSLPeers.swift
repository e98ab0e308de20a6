import Foundation
import Glibc

/// A throwaway self-signed P-256 certificate for `localhost`, usable at every TLS version.
final class TestCertificate: @unchecked Sendable {
    let directory: TempDirectory
    var certPath: String { directory.path + "/cert.pem" }
    var keyPath: String { directory.path + "/key.pem" }

    init() throws {
        directory = try TempDirectory()
        let made = try Subprocess.run(OpenSSLTool.path, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", directory.path + "/key.pem", "-out", directory.path + "/cert.pem",
            "-subj", "/CN=localhost", "-days", "1",
        ], timeout: 30)
        guard made.status == 0 else { throw HarnessError("openssl req: \(made.stderr)") }
    }
}

/// The `openssl` command and the flags that pin one TLS version on either peer.
enum OpenSSLTool {
    static var path: String { Subprocess.find("openssl") ?? "/usr/bin/openssl" }

    /// `-tls1_2`, plus `-cipher DEFAULT@SECLEVEL=0` below 1.2: OpenSSL 3 refuses 1.0 and 1.1
    /// at its default security level, and then fails with a misleading `internal_error`.
    static func versionFlags(_ version: String) -> [String] {
        switch version {
        case "1.0": return ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"]
        case "1.1": return ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]
        case "1.2": return ["-tls1_2"]
        case "1.3": return ["-tls1_3"]
        default: preconditionFailure("no TLS version \(version)")
        }
    }
}

/// A real app server: `openssl s_server -www` on a loopback port, speaking only `version`
/// when given. `-www` answers `GET /` with `HTTP/1.0 200 ok` and a page naming itself, so a
/// client that reads that page proves bytes went both ways. It serves one connection at a
/// time, which the tests' sequential cases never notice.
final class OpenSSLServer: @unchecked Sendable {
    /// What the server's `-www` answer starts with.
    static let answer = "HTTP/1.0 200 ok"
    let version: String?
    private let server: TLSAppServer

    init(certificate: TestCertificate, version: String? = nil) throws {
        self.version = version
        server = try TLSAppServer(cert: certificate.certPath, key: certificate.keyPath,
                                  options: version.map(OpenSSLTool.versionFlags) ?? [])
    }

    var port: UInt16 { server.port }

    func stop() { server.stop() }
}

/// One `openssl s_client` run that sends `GET /` once its handshake completes, and what it
/// printed.
struct OpenSSLClientRun: Sendable, CustomStringConvertible {
    let result: ProcessResult
    var output: String { result.stdoutText + "\n" + result.stderr }

    /// The handshake completed and the server's answer to the request came back.
    var exchangedBytes: Bool { result.stdoutText.contains(OpenSSLServer.answer) }
    /// The client's handshake ended with a `protocol_version` alert from its peer.
    var sawProtocolVersionAlert: Bool { output.contains("alert protocol version") }
    /// `Protocol  : TLSv1.2` from the session summary.
    var negotiated: String? {
        for line in result.stdoutText.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("Protocol  :") {
                return trimmed.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        return nil
    }

    /// How a failure message shows it: the outcome and the lines that explain it.
    var description: String { summary }

    var summary: String {
        "status=\(result.status) negotiated=\(negotiated ?? "none") exchanged=\(exchangedBytes)\n"
            + output.split(separator: "\n").filter { $0.contains("alert") || $0.contains("error") || $0.contains("CONNECT") }
            .prefix(6).joined(separator: "\n")
    }

    /// `openssl s_client` through the relay's CONNECT (`proxyPort`) or straight to `port`
    /// (a static forward when `proxyPort` is nil). `servername` nil sends no SNI at all.
    static func run(proxyPort: UInt16?, connect: String, servername: String?, version: String? = nil,
                    timeout: Double = 20) throws -> OpenSSLClientRun {
        var arguments = ["s_client", "-connect", connect, "-ign_eof"]
        if let proxyPort { arguments += ["-proxy", "127.0.0.1:\(proxyPort)"] }
        arguments += servername.map { ["-servername", $0] } ?? ["-noservername"]
        arguments += version.map(OpenSSLTool.versionFlags) ?? []
        let result = try Subprocess.run(OpenSSLTool.path, arguments,
                                        input: .bytes(Array("GET / HTTP/1.0\r\n\r\n".utf8)), timeout: timeout)
        return OpenSSLClientRun(result: result)
    }
}

/// A real ClientHello: what `openssl s_client -servername localhost` sends first, caught on a
/// loopback listener, so raw-socket tests can replay it split however they like.
enum CapturedClientHello {
    /// The first TLS record `openssl s_client` writes (its whole ClientHello), naming
    /// `servername`.
    static func capture(servername: String = "localhost") throws -> [UInt8] {
        let listener = try TestListener()
        let caught = LockedBox<[UInt8]?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            guard let socket = listener.accept() else { return }
            socket.setTimeout(seconds: 10)
            guard let header = try? socket.readExactly(5), header[0] == 0x16 else { return }
            let length = Int(header[3]) << 8 | Int(header[4])
            guard let body = try? socket.readExactly(length) else { return }
            caught.set(header + body)
            socket.close()
        }
        // The client fails once its peer closes; only what it sent first matters.
        _ = try Subprocess.run(OpenSSLTool.path, ["s_client", "-connect", "127.0.0.1:\(listener.port)",
                                                  "-servername", servername], timeout: 15)
        _ = done.wait(timeout: .now() + 10)
        listener.stop()
        guard let hello = caught.get(), hello.count > 9, hello[5] == 0x01 else {
            throw HarnessError("openssl s_client sent no ClientHello record")
        }
        return hello
    }
}
