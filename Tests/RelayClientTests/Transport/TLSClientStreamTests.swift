import Foundation
import Glibc
import RelayClient
import RelayCore
import Testing

/// `TLSClientStream` over `TCPClientStream` against `openssl s_server`: versions, trust,
/// names, resumption.
@Suite struct TLSClientStreamTests {
    static let certificates = TransportCertificates.shared
    static let options = ClientTransportOptions(connectTimeout: .seconds(5), tlsHandshakeTimeout: .seconds(5),
                                                idleTimeout: .seconds(5))

    static func connect(port: UInt16, host: String = "localhost", tls: ClientTLSOptions) async throws(RelayClientError)
        -> TLSClientStream {
        let tcp = try await TCPClientStream.connect(host: "127.0.0.1", port: port, options: options)
        return try await TLSClientStream.connect(over: tcp, host: host, port: port, tls: tls, options: options)
    }

    /// Sends a line and reads s_server's reversed answer.
    static func exchange(_ stream: TLSClientStream, _ line: String) async throws -> String {
        try await stream.write(Array((line + "\n").utf8))
        let answer = try await readExactly(line.count + 1) { try await stream.read(maxBytes: $0) }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test(arguments: [("-tls1_2", TLSVersion.tls1_2), ("-tls1_3", TLSVersion.tls1_3)])
    func handshakesWithATrustedServer(flag: String, version: TLSVersion) async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("server"),
                                            key: Self.certificates.key("server"), [flag])
        for host in ["localhost", "127.0.0.1"] {
            let stream = try await Self.connect(port: server.port, host: host,
                                                tls: ClientTLSOptions(caFile: Self.certificates.caFile))
            #expect(stream.negotiatedVersion == version)
            #expect(try await Self.exchange(stream, "hello tls") == "slt olleh\n")
            try await stream.shutdownWrite()
            stream.close()
        }
    }

    @Test func aCertificateForAnotherHostIsHostMismatch() async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("other-host"),
                                            key: Self.certificates.key("other-host"))
        do {
            _ = try await Self.connect(port: server.port, tls: ClientTLSOptions(caFile: Self.certificates.caFile))
            Issue.record("accepted a certificate for other.example as localhost")
        } catch {
            #expect(error.code == .tlsHostMismatch, "\(error)")
            #expect(error.tlsDetail?.contains("hostname mismatch") == true, "\(error)")
        }
    }

    @Test func aSelfSignedCertificateIsUntrustedUnlessVerificationIsOff() async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("self-signed"),
                                            key: Self.certificates.key("self-signed"))
        do {
            _ = try await Self.connect(port: server.port, tls: ClientTLSOptions(caFile: Self.certificates.caFile))
            Issue.record("trusted a self-signed certificate")
        } catch {
            #expect(error.code == .tlsCertUntrusted, "\(error)")
        }
        let unverified = try await Self.connect(port: server.port, tls: ClientTLSOptions(verify: false))
        defer { unverified.close() }
        #expect(try await Self.exchange(unverified, "abc") == "cba\n")
    }

    @Test func aVersionNotEnabledIsTLSVersion() async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("server"),
                                            key: Self.certificates.key("server"), ["-tls1_3"])
        let onlyTLS12 = try TLSVersionSet.parse(["1.2"]).get()
        do {
            _ = try await Self.connect(port: server.port, tls: ClientTLSOptions(versions: onlyTLS12, caFile: Self.certificates.caFile))
            Issue.record("a TLS 1.2 client met a TLS 1.3-only server")
        } catch {
            #expect(error.code == .tlsVersion, "\(error)")
        }
    }

    @Test func aSecondConnectionResumes() async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("server"),
                                            key: Self.certificates.key("server"))
        // Options of their own, so another test's sessions do not count.
        let tls = ClientTLSOptions(versions: try TLSVersionSet.parse(["1.2", "1.3"]).get(), caFile: Self.certificates.caFile)
        let first = try await Self.connect(port: server.port, tls: tls)
        #expect(first.sessionReused == false)
        // TLS 1.3 tickets arrive after the handshake: an exchange reads them.
        #expect(try await Self.exchange(first, "one") == "eno\n")
        try await first.shutdownWrite()
        first.close()
        let second = try await Self.connect(port: server.port, tls: tls)
        defer { second.close() }
        #expect(second.sessionReused, "\(server.output)")
        #expect(try await Self.exchange(second, "two") == "owt\n")
    }

    @Test func aServerThatNeverAnswersTimesOutTheHandshake() async throws {
        let server = try LoopbackServer { fd in
            _ = LoopbackServer.receiveAll(fd)
            close(fd)
        }
        let options = ClientTransportOptions(connectTimeout: .seconds(5), tlsHandshakeTimeout: .milliseconds(300),
                                             idleTimeout: .seconds(30))
        let tcp = try await TCPClientStream.connect(host: "127.0.0.1", port: server.port, options: options)
        do {
            _ = try await TLSClientStream.connect(over: tcp, host: "localhost", port: server.port,
                                                  tls: ClientTLSOptions(caFile: Self.certificates.caFile), options: options)
            Issue.record("a handshake with a silent server finished")
        } catch {
            #expect(error.code == .timeout, "\(error)")
        }
    }

    @Test func anUnreadableCAFileIsTLSConfiguration() async throws {
        let server = try ReversingTLSServer(certificate: Self.certificates.certificate("server"),
                                            key: Self.certificates.key("server"))
        do {
            _ = try await Self.connect(port: server.port, tls: ClientTLSOptions(caFile: "/nonexistent/ca.pem"))
            Issue.record("a missing CA file was accepted")
        } catch {
            #expect(error.code == .tlsConfiguration, "\(error)")
        }
    }
}
