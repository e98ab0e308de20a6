import Foundation
import Glibc

/// A real TLS server: `openssl s_server -www` on a loopback port with a throwaway
/// self-signed certificate. Its answer to `GET /` contains `greeting`.
final class TLSOrigin: @unchecked Sendable {
    static let greeting = "s_server"
    let port: UInt16
    private let directory: TempDirectory
    private let process = Process()

    init() throws {
        directory = try TempDirectory()
        let key = directory.path + "/key.pem", cert = directory.path + "/cert.pem"
        let made = try Subprocess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", cert, "-subj", "/CN=localhost", "-days", "1",
        ])
        guard made.status == 0 else { throw HarnessError("openssl req: \(made.stderr)") }
        port = try TestListener.refusedPort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key, "-www", "-quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let probe = try? TestSocket.connect(port: port) {
                probe.close()
                return
            }
            usleep(20_000)
        }
        stop()
        throw HarnessError("openssl s_server did not listen on \(port)")
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: a child of Foundation's Process can inherit the test thread's blocked
            // SIGTERM and would never see terminate().
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

/// `openssl s_client -proxy … -proxy_user … -proxy_pass pass:…`: TLS through an
/// authenticated CONNECT, sending `GET /` once connected.
enum OpenSSLClient {
    static func connect(through proxyPort: UInt16, to port: UInt16, user: String, password: String) throws -> ProcessResult {
        try Subprocess.run("/usr/bin/openssl", [
            "s_client", "-proxy", "127.0.0.1:\(proxyPort)", "-proxy_user", user, "-proxy_pass", "pass:\(password)",
            "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-ign_eof",
        ], input: .bytes(Array("GET / HTTP/1.0\r\n\r\n".utf8)), timeout: 20)
    }
}
