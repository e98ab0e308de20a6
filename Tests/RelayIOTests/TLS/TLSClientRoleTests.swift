import Foundation
import Glibc
import RelayIO
import Testing

/// A client-role `TLSConnection` to `openssl s_server -rev` (which answers each line
/// reversed), as the relay's own TLS to an app server.
private func connectClient(_ context: TLSContext, port: UInt16, host: String = "localhost")
    throws -> (connection: TLSConnection, result: TLSHandshakeResult?) {
    let fd = try TLSTestDriver.connect(port: port)
    let connection = try TLSConnection(fd: fd, context: context, role: .client(host: host, port: port))
    return (connection, TLSTestDriver.handshake(connection))
}

/// One line there and its reversal back: the stream carries bytes both ways.
private func exchangeLine(_ connection: TLSConnection) -> String {
    guard TLSTestDriver.writeAll(connection, Array("ping\n".utf8)) else { return "write failed" }
    return String(decoding: TLSTestDriver.read(connection, count: 5).bytes, as: UTF8.self)
}

private func serverArguments(_ name: String = "server") -> [String] {
    let files = TLSTestCertificates.shared
    return ["-cert", files.certificate(name), "-key", files.key(name)]
}

private func clientContext(_ versions: TLSProtocols, verify: Bool = true) throws -> TLSContext {
    try TLSContext.client(caFile: TLSTestCertificates.shared.caCertificate, verify: verify, versions: versions)
}

extension RelayIOSuite {
    @Suite struct TLSClientRoleTests {
        @Test(arguments: TLSServerRoleTests.versionCases)
        func serverVersionIsKeptOrRefusedAsConfigured(allowed: [String], offered: String) throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments() + peerVersionOptions(offered))
            defer { server.stop() }
            let (connection, result) = try connectClient(clientContext(protocols(allowed)), port: port)
            defer { close(connection.fd) }
            if allowed.contains(offered) {
                #expect(result == .done, "\(String(describing: result)) \(server.output)")
                #expect(connection.protocolVersion == "TLSv\(offered == "1.0" ? "1" : offered)")
                #expect(exchangeLine(connection) == "gnip\n")
            } else {
                #expect(result?.failureKind == .noSharedVersion, "\(String(describing: result))")
            }
        }

        @Test func legacyVersionUnderThePeersSecurityLevelIsReadable() throws {
            // The server allows TLS 1.0 but keeps Debian's security level 2: it answers the
            // relay's 1.0 hello with an internal_error alert.
            let (server, port) = try OpenSSLPeer.server(serverArguments() + ["-tls1"])
            defer { server.stop() }
            let (connection, result) = try connectClient(clientContext(protocols(["1.0"])), port: port)
            defer { close(connection.fd) }
            guard case .failed(let failure) = result else {
                Issue.record("handshake: \(String(describing: result))")
                return
            }
            #expect(failure.kind == .securityLevel, "\(failure)")
            #expect(failure.detail.contains("security level"))
        }

        @Test(arguments: [("expired", "localhost", TLSFailure.Kind.certificateExpired),
                          ("self-signed", "localhost", .certificateUntrusted),
                          ("server", "app.corp.example", .hostMismatch),
                          ("client-cn", "127.0.0.1", .hostMismatch)])
        func badServerCertificatesAreRefusedByKind(certificate: String, host: String, kind: TLSFailure.Kind) throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments(certificate))
            defer { server.stop() }
            let (connection, result) = try connectClient(clientContext(.modern), port: port, host: host)
            defer { close(connection.fd) }
            guard case .failed(let failure) = result else {
                Issue.record("handshake: \(String(describing: result))")
                return
            }
            #expect(failure.kind == kind, "\(failure)")
            #expect(failure.detail.contains("certificate verify"))
        }

        @Test func anIPLiteralIsCheckedAgainstTheCertificatesAddress() throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments())
            defer { server.stop() }
            let (connection, result) = try connectClient(clientContext(.modern), port: port, host: "127.0.0.1")
            defer { close(connection.fd) }
            #expect(result == .done)
            #expect(exchangeLine(connection) == "gnip\n")
        }

        @Test func verifyOffAcceptsAnUntrustedCertificate() throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments("self-signed"))
            defer { server.stop() }
            let (connection, result) = try connectClient(clientContext(.modern, verify: false), port: port,
                                                         host: "app.corp.example")
            defer { close(connection.fd) }
            #expect(result == .done)
            #expect(exchangeLine(connection) == "gnip\n")
        }

        @Test func theSystemTrustStoreDoesNotTrustATestCA() throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments())
            defer { server.stop() }
            let context = try TLSContext.client(versions: .modern)
            let (connection, result) = try connectClient(context, port: port)
            defer { close(connection.fd) }
            #expect(result?.failureKind == .certificateUntrusted)
        }

        @Test(arguments: ["1.2", "1.3"])
        func aSecondConnectionToTheSameUpstreamResumes(version: String) throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments() + peerVersionOptions(version))
            defer { server.stop() }
            let context = try clientContext(.modern)
            var reused: [Bool] = []
            for _ in 0..<2 {
                let (connection, result) = try connectClient(context, port: port)
                #expect(result == .done)
                // The line read also takes in a 1.3 ticket, which the cache keeps.
                #expect(exchangeLine(connection) == "gnip\n")
                reused.append(connection.sessionReused)
                connection.shutdown()
                close(connection.fd)
            }
            #expect(reused == [false, true])
            #expect(context.sessionCache?.count == 1)
        }

        @Test(arguments: [(1, [false, false, false, false]), (2, [false, false, true, true])])
        func theSessionCacheKeepsItsNewestUpstreams(capacity: Int, expected: [Bool]) throws {
            let (server, port) = try OpenSSLPeer.server(serverArguments())
            defer { server.stop() }
            let context = try TLSContext.client(caFile: TLSTestCertificates.shared.caCertificate, versions: .modern,
                                                sessionCacheCapacity: capacity)
            // Two upstreams by key (a name and an address), each connected to twice.
            var reused: [Bool] = []
            for host in ["localhost", "127.0.0.1", "localhost", "127.0.0.1"] {
                let (connection, result) = try connectClient(context, port: port, host: host)
                #expect(result == .done)
                #expect(exchangeLine(connection) == "gnip\n")
                reused.append(connection.sessionReused)
                connection.shutdown()
                close(connection.fd)
            }
            #expect(reused == expected)
            #expect(context.sessionCache?.count == capacity)
        }
    }
}
