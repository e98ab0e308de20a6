import Foundation
import Glibc
import RelayIO
import Testing

/// A server-role `TLSConnection` on an accepted loopback socket against `openssl s_client`.
private final class ServerSide {
    let listener: Int32
    let port: UInt16

    init() throws {
        (listener, port) = try TLSTestDriver.listen()
    }

    deinit { close(listener) }

    /// Starts `s_client` with `arguments`, accepts it and runs the handshake.
    func accept(_ context: TLSContext, clientArguments: [String]) throws
        -> (client: OpenSSLPeer, connection: TLSConnection, result: TLSHandshakeResult?) {
        let client = try OpenSSLPeer.client(port: port, clientArguments)
        let fd = try #require(TLSTestDriver.accept(listener))
        let connection = try TLSConnection(fd: fd, context: context, role: .server)
        return (client, connection, TLSTestDriver.handshake(connection))
    }
}

private func serverContext(_ versions: TLSProtocols, clientCA: Bool = false, require: Bool = false,
                           inheriting previous: TLSContext? = nil) throws -> TLSContext {
    let files = TLSTestCertificates.shared
    return try TLSContext.server(certificateFile: files.certificate("server"), keyFile: files.key("server"),
                                 clientCAFile: clientCA ? files.caCertificate : nil, requireClientCertificate: require,
                                 versions: versions, inheritingTicketKeysFrom: previous)
}

extension RelayIOSuite {
    @Suite struct TLSServerRoleTests {
        static let versionCases: [(allowed: [String], offered: String)] = [
            (["1.0", "1.1", "1.2", "1.3"], "1.0"), (["1.0", "1.1", "1.2", "1.3"], "1.1"),
            (["1.0", "1.1", "1.2", "1.3"], "1.2"), (["1.0", "1.1", "1.2", "1.3"], "1.3"),
            (["1.2", "1.3"], "1.0"), (["1.2", "1.3"], "1.1"), (["1.2", "1.3"], "1.2"), (["1.2", "1.3"], "1.3"),
            (["1.1", "1.2"], "1.3"), (["1.0", "1.2"], "1.1"), (["1.3"], "1.2"),
        ]

        @Test(arguments: versionCases)
        func clientVersionIsKeptOrRefusedAsConfigured(allowed: [String], offered: String) throws {
            let side = try ServerSide()
            let (client, connection, result) = try side.accept(serverContext(protocols(allowed)),
                                                               clientArguments: peerVersionOptions(offered) + quiet)
            defer { client.stop() }
            if allowed.contains(offered) {
                #expect(result == .done, "\(client.output)")
                #expect(connection.protocolVersion == "TLSv\(offered == "1.0" ? "1" : offered)")
                #expect(connection.cipherName?.isEmpty == false)
                // Bytes reach s_client, which prints them.
                #expect(TLSTestDriver.writeAll(connection, Array("from the relay\n".utf8)))
                #expect(eventually(within: .seconds(5)) { client.output.contains("from the relay") }, "\(client.output)")
            } else {
                #expect(result?.failureKind == .noSharedVersion, "\(String(describing: result))")
            }
            close(connection.fd)
        }

        @Test func plaintextHTTPIsNotTLS() throws {
            let side = try ServerSide()
            for request in ["GET / HTTP/1.1\r\nHost: x\r\n\r\n", "CONNECT app:443 HTTP/1.1\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n"] {
                let peer = try Peer.connect(to: SocketAddress(ip: "127.0.0.1", port: side.port)!).get()
                defer { close(peer) }
                #expect(Peer.sendAll(peer, Array(request.utf8)) == 0)
                let fd = try #require(TLSTestDriver.accept(side.listener))
                defer { close(fd) }
                let connection = try TLSConnection(fd: fd, context: serverContext(.modern), role: .server)
                let result = TLSTestDriver.handshake(connection)
                #expect(result?.failureKind == .notTLS, "\(request): \(String(describing: result))")
            }
        }

        @Test func readsTheClientsBytesThenItsCloseNotify() throws {
            let side = try ServerSide()
            let (client, connection, result) = try side.accept(serverContext(.modern),
                                                               clientArguments: quiet + ["-servername", "localhost"])
            defer { client.stop() }
            #expect(result == .done)
            #expect(connection.requestedServerName == "localhost")
            client.send("hello relay\n")
            client.closeInput()
            let (bytes, end) = TLSTestDriver.read(connection)
            #expect(String(decoding: bytes, as: UTF8.self) == "hello relay\n")
            #expect(end == .closed)
            close(connection.fd)
        }

        @Test func aKilledClientIsATCPEOFWithoutCloseNotify() throws {
            let side = try ServerSide()
            let (client, connection, result) = try side.accept(serverContext(.modern), clientArguments: quiet)
            #expect(result == .done)
            client.send("partial\n")
            let (first, _) = TLSTestDriver.read(connection, count: 8)
            #expect(String(decoding: first, as: UTF8.self) == "partial\n")
            // Once s_client printed this it has read everything sent (the tickets too), so
            // its kernel closes with a FIN, not a reset for unread bytes.
            #expect(TLSTestDriver.writeAll(connection, Array("seen\n".utf8)))
            #expect(eventually(within: .seconds(5)) { client.output.contains("seen") })
            client.kill()
            let (rest, end) = TLSTestDriver.read(connection)
            #expect(rest.isEmpty)
            #expect(end == .eof)
            // Half-closed, the other direction still writes (the peer is gone: a write may
            // fail with a reset, but it must not be refused as a fatal TLS state).
            _ = TLSTestDriver.writeAll(connection, Array("late".utf8))
            close(connection.fd)
        }

        @Test func requiredClientCertificateMissingIsRefused() throws {
            let side = try ServerSide()
            for version in ["1.2", "1.3"] {
                let (client, connection, result) = try side.accept(serverContext(.modern, clientCA: true, require: true),
                                                                   clientArguments: peerVersionOptions(version) + quiet)
                defer { client.stop() }
                #expect(result?.failureKind == .noClientCertificate, "\(version): \(String(describing: result))")
                close(connection.fd)
            }
        }

        @Test func optionalClientCertificateMissingLeavesNoIdentity() throws {
            let side = try ServerSide()
            let (client, connection, result) = try side.accept(serverContext(.modern, clientCA: true), clientArguments: quiet)
            defer { client.stop() }
            #expect(result == .done)
            #expect(connection.peerCertificateIdentity == nil)
            close(connection.fd)
        }

        @Test(arguments: [("client-email", "dev@corp.example"), ("client-cn", "device-7")])
        func clientCertificateIdentityIsSANEmailElseCN(name: String, identity: String) throws {
            let files = TLSTestCertificates.shared
            let side = try ServerSide()
            for require in [false, true] {
                let (client, connection, result) = try side.accept(
                    serverContext(.modern, clientCA: true, require: require),
                    clientArguments: quiet + ["-cert", files.certificate(name), "-key", files.key(name)])
                defer { client.stop() }
                #expect(result == .done)
                #expect(connection.peerCertificateIdentity == identity)
                close(connection.fd)
            }
        }

        @Test func untrustedClientCertificateIsRefused() throws {
            let files = TLSTestCertificates.shared
            let side = try ServerSide()
            let (client, connection, result) = try side.accept(
                serverContext(.modern, clientCA: true),
                clientArguments: quiet + ["-cert", files.certificate("self-signed"), "-key", files.key("self-signed")])
            defer { client.stop() }
            #expect(result?.failureKind == .certificateUntrusted, "\(String(describing: result))")
            close(connection.fd)
        }

        @Test(arguments: ["1.2", "1.3"])
        func ticketsResumeAndSurviveAContextRebuiltWithTheirKeys(version: String) throws {
            let side = try ServerSide()
            let session = TLSTestCertificates.shared.path("session-\(version)-\(UInt32.random(in: 0...UInt32.max)).pem")
            let first = try serverContext(.modern)
            /// One s_client run; true when our side saw a resumed session.
            func connect(_ context: TLSContext, saving: Bool) throws -> Bool {
                let options = peerVersionOptions(version) + quiet + (saving ? ["-sess_out", session] : ["-sess_in", session])
                let (client, connection, result) = try side.accept(context, clientArguments: options)
                defer { close(connection.fd) }
                #expect(result == .done)
                // A 1.3 ticket goes out after the handshake: s_client reads it with these bytes.
                #expect(TLSTestDriver.writeAll(connection, Array("ticket\n".utf8)))
                #expect(eventually(within: .seconds(5)) { client.output.contains("ticket") })
                client.closeInput()
                _ = TLSTestDriver.read(connection)
                #expect(client.waitForExit())
                return connection.sessionReused
            }
            #expect(try connect(first, saving: true) == false)
            #expect(try connect(first, saving: false) == true)
            #expect(try connect(serverContext(.modern, inheriting: first), saving: false) == true)
            // A context with its own keys cannot read the ticket: a full handshake.
            #expect(try connect(serverContext(.modern), saving: false) == false)
        }
    }
}
