import Foundation
import Glibc

/// A throwaway certificate authority made per test with the `openssl` CLI, and the server
/// certificates it (or no one) signs, with the names and dates each case needs.
final class TestPKI: @unchecked Sendable {
    /// The subjectAltName of a certificate valid for the relay's loopback tests both by name
    /// and by address.
    static let loopbackNames = "DNS:localhost,IP:127.0.0.1"

    let directory: TempDirectory
    /// The CA's certificate: what a rule's `ca=` names.
    let caFile: String
    private let caKey: String
    private var serial = 1

    init() throws {
        directory = try TempDirectory()
        caFile = directory.path + "/ca.pem"
        caKey = directory.path + "/ca.key"
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", caKey, "-out", caFile, "-subj", "/CN=dynrelay test CA", "-days", "2",
                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try directory.write("ca.cnf", """
            [ca]
            default_ca = test
            [test]
            database = \(directory.path)/index.txt
            serial = \(directory.path)/serial
            new_certs_dir = \(directory.path)
            default_md = sha256
            policy = anything
            copy_extensions = copy
            unique_subject = no
            [anything]
            commonName = supplied
            """)
        try directory.write("index.txt", "")
    }

    /// A certificate and key for `names` (a subjectAltName value), signed by the CA, valid
    /// from `notBefore` to `notAfter` (`YYYYMMDDHHMMSSZ`); returns (certificate, key) paths.
    func issue(_ label: String, names: String, notBefore: String = "20200101000000Z",
               notAfter: String = "20991231000000Z") throws -> (cert: String, key: String) {
        let key = directory.path + "/\(label).key", request = directory.path + "/\(label).csr"
        let cert = directory.path + "/\(label).pem"
        try Self.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key, "-out", request, "-subj", "/CN=\(label)", "-addext", "subjectAltName=\(names)"])
        serial += 1
        try directory.write("serial", String(format: "%02X\n", serial))
        try Self.openssl(["ca", "-batch", "-notext", "-config", directory.path + "/ca.cnf", "-cert", caFile,
                          "-keyfile", caKey, "-in", request, "-out", cert, "-startdate", notBefore, "-enddate", notAfter])
        return (cert, key)
    }

    /// A self-signed certificate for `names`, which no `ca=` vouches for.
    func selfSigned(_ label: String, names: String) throws -> (cert: String, key: String) {
        let key = directory.path + "/\(label).key", cert = directory.path + "/\(label).pem"
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key, "-out", cert, "-subj", "/CN=\(label)", "-days", "2",
                          "-addext", "subjectAltName=\(names)"])
        return (cert, key)
    }

    private static func openssl(_ arguments: [String]) throws {
        let made = try Subprocess.run("/usr/bin/openssl", arguments, timeout: 20)
        guard made.status == 0 else { throw HarnessError("openssl \(arguments.first ?? ""): \(made.stderr)") }
    }
}

/// An app server speaking only TLS: `openssl s_server -www` on a loopback port with the
/// given certificate and extra options (`-tls1_1`, `-cipher …`). It answers each `GET` with
/// a status page that says whether the session was `New` or `Reused`, then closes.
final class TLSAppServer: @unchecked Sendable {
    let port: UInt16
    private let process = Process()

    convenience init(cert: String, key: String, options: [String] = []) throws {
        try self.init(executable: "/usr/bin/openssl") { port in
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key, "-www", "-quiet"] + options
        }
    }

    /// Another TLS server program, started with `arguments(port)` and waited for until it
    /// accepts on that loopback port.
    init(executable: String, arguments: (UInt16) -> [String]) throws {
        port = try TestListener.refusedPort()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments(port)
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
        throw HarnessError("\(executable) did not listen on \(port)")
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
