import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// Session ticket keys across a reload of an HTTPS listener with `client-ca=`: a ticket
    /// brings back the client certificate verified under the CA of its day.
    @Suite("HTTPS listener ticket keys and client-CA trust")
    struct HTTPSListenerTicketTrustTests {
        @Test("a reload keeps the ticket keys while the client-CA file holds the same CA, and drops them when the same path holds another")
        func ticketKeysFollowTheCAFileContents() throws {
            let certs = try TestCertificates()
            let otherCA = try TestCertificates()
            let clientCA = certs.directory.path + "/client-ca.pem"
            try FileManager.default.copyItem(atPath: certs.caCert, toPath: clientCA)
            let device = try certs.issue("device", subject: "/CN=device")
            let relay = try RelayProcess(config: HTTPSListenerTests.config(certs, server: try certs.issueServer(),
                                                                          listenerOptions: "client-ca=\(clientCA)",
                                                                          upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let session = certs.directory.path + "/session.pem"
            let asDevice = ["-CAfile", certs.caCert, "-tls1_2", "-cert", device.cert, "-key", device.key]

            let first = try HTTPSListenerTests.sClient(port, asDevice + ["-sess_out", session], input: "")
            #expect(first.stdoutText.contains("New, TLSv1.2"), "\(first.stdoutText)\n\(relay.stderr)")

            /// Puts `ca` at the client-CA path, reloads, and offers the saved TLS session again.
            func reload(putting ca: String, reloads: Int) throws -> String {
                try FileManager.default.removeItem(atPath: clientCA)
                try FileManager.default.copyItem(atPath: ca, toPath: clientCA)
                kill(relay.pid, SIGHUP)
                #expect(ReloadTests.waitForLog(relay, "dynrelay: reloaded", count: reloads), "\(relay.stderr)")
                return try HTTPSListenerTests.sClient(port, asDevice + ["-sess_in", session], input: "").stdoutText
            }

            // The file rewritten with the same CA: the trust is unchanged, the session resumes.
            let same = try reload(putting: certs.caCert, reloads: 1)
            #expect(same.contains("Reused, TLSv1.2"), "same CA, same keys: \(same)")
            // Another CA at the same path: a ticket from under the old one must not resume.
            let other = try reload(putting: otherCA.caCert, reloads: 2)
            #expect(!other.contains("Reused"), "another CA, new keys: \(other)")
            #expect(other.contains("New, ") || other.contains("Cipher is (NONE)"),
                    "a full handshake, where the old CA's device is no longer trusted: \(other)")
        }
    }
}
