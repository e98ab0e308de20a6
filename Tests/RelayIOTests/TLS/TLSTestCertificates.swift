import Foundation
import Glibc

/// Throwaway certificates made once per test process with the `openssl` CLI in a temp
/// directory: a CA, server certificates (valid for localhost and 127.0.0.1, expired,
/// self-signed), client certificates (with a SAN email, with a CN only), a key that matches
/// nothing.
final class TLSTestCertificates: Sendable {
    static let shared: TLSTestCertificates = {
        do { return try TLSTestCertificates() } catch { fatalError("cannot make test certificates: \(error)") }
    }()

    let directory: String
    var caCertificate: String { path("ca.pem") }
    var caKey: String { path("ca.key") }

    private init() throws {
        directory = NSTemporaryDirectory() + "relayio-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/issued", withIntermediateDirectories: true)
        try "".write(toFile: path("index.txt"), atomically: true, encoding: .utf8)
        try "1000\n".write(toFile: path("serial"), atomically: true, encoding: .utf8)
        try """
            [ca]
            default_ca = test
            [test]
            database = \(path("index.txt"))
            new_certs_dir = \(path("issued"))
            serial = \(path("serial"))
            default_md = sha256
            policy = anything
            copy_extensions = copy
            unique_subject = no
            [anything]
            commonName = supplied
            """.write(toFile: path("ca.cnf"), atomically: true, encoding: .utf8)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", caKey, "-out", caCertificate, "-subj", "/CN=dynrelay test CA", "-days", "30"])
        try issue("server", subject: "/CN=localhost", san: "DNS:localhost,IP:127.0.0.1")
        try issue("expired", subject: "/CN=localhost", san: "DNS:localhost,IP:127.0.0.1",
                  dates: ["-startdate", "20200101000000Z", "-enddate", "20200201000000Z"])
        try issue("client-email", subject: "/CN=device-cn", san: "email:dev@corp.example")
        try issue("client-cn", subject: "/CN=device-7", san: nil)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key("self-signed"), "-out", certificate("self-signed"), "-subj", "/CN=localhost",
                          "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "30"])
        try Self.openssl(["genpkey", "-algorithm", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key("stray")])
    }

    func path(_ name: String) -> String { directory + "/" + name }
    func certificate(_ name: String) -> String { path(name + ".pem") }
    func key(_ name: String) -> String { path(name + ".key") }

    private func issue(_ name: String, subject: String, san: String?, dates: [String] = ["-days", "30"]) throws {
        var request = ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                       "-keyout", key(name), "-out", path(name + ".csr"), "-subj", subject]
        if let san { request += ["-addext", "subjectAltName=\(san)"] }
        try Self.openssl(request)
        try Self.openssl(["ca", "-batch", "-config", path("ca.cnf"), "-cert", caCertificate, "-keyfile", caKey,
                          "-in", path(name + ".csr"), "-out", certificate(name), "-notext"] + dates)
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
    }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailed(description: "openssl \(arguments.joined(separator: " ")): "
                                + String(decoding: text, as: UTF8.self))
        }
    }
}
