import Foundation
import Glibc

/// A real TLS server: `openssl s_server -www` on a loopback port with a throwaway
/// self-signed certificate. Its answer to `GET /` contains `greeting`.
final class TLSOrigin: @unchecked Sendable {
    static let greeting = "s_server"
    private let directory: TempDirectory
    private let server: TLSAppServer

    init() throws {
        directory = try TempDirectory()
        let key = directory.path + "/key.pem", cert = directory.path + "/cert.pem"
        let made = try Subprocess.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", cert, "-subj", "/CN=localhost", "-days", "1",
        ])
        guard made.status == 0 else { throw HarnessError("openssl req: \(made.stderr)") }
        server = try TLSAppServer(cert: cert, key: key)
    }

    var port: UInt16 { server.port }

    func stop() { server.stop() }
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
