import Foundation

/// A throwaway CA and certificates it signs, made with `openssl req -x509` in a temp
/// directory for one test: a server certificate for 127.0.0.1 and client certificates.
final class TestCertificates: @unchecked Sendable {
    let directory: TempDirectory
    var caCert: String { directory.path + "/ca.pem" }
    var caKey: String { directory.path + "/ca.key" }

    init() throws {
        directory = try TempDirectory()
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", caKey, "-out", caCert, "-subj", "/CN=dynrelay test CA", "-days", "2"])
    }

    /// Writes `NAME.pem` and `NAME.key`, signed by the CA; returns (cert, key) paths.
    @discardableResult
    func issue(_ name: String, subject: String, san: String? = nil, days: Int = 2) throws -> (cert: String, key: String) {
        let cert = directory.path + "/\(name).pem", key = directory.path + "/\(name).key"
        var arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-keyout", key, "-out", cert, "-subj", subject, "-days", "\(days)",
                         "-CA", caCert, "-CAkey", caKey]
        if let san { arguments += ["-addext", "subjectAltName=\(san)"] }
        try Self.openssl(arguments)
        return (cert, key)
    }

    /// The server certificate for 127.0.0.1 (`server.pem`, `server.key`).
    @discardableResult
    func issueServer(_ name: String = "server", days: Int = 2) throws -> (cert: String, key: String) {
        try issue(name, subject: "/CN=127.0.0.1", san: "IP:127.0.0.1", days: days)
    }

    /// The SHA-256 fingerprint line of a certificate (`openssl x509 -fingerprint`).
    static func fingerprint(_ cert: String) throws -> String {
        try openssl(["x509", "-in", cert, "-noout", "-fingerprint", "-sha256"]).stdout
    }

    @discardableResult
    static func openssl(_ arguments: [String], input: Subprocess.Input = .none, timeout: Double = 20) throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try Subprocess.run("/usr/bin/openssl", arguments, input: input, timeout: timeout)
        if arguments.first == "req" || arguments.first == "x509", result.status != 0 {
            throw HarnessError("openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
    }
}
