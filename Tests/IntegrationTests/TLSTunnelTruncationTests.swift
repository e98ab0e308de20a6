import Foundation
import Synchronization
import Testing

extension IntegrationSuite {
    /// A tunnel from the HTTPS listener whose client ends its TLS with a bare TCP FIN and no
    /// close_notify: a cut, which the plain upstream must not read as the stream's end.
    @Suite("TLS tunnel truncation")
    struct TLSTunnelTruncationTests {
        /// A Python TLS client through the HTTPS listener: `CONNECT`, the upload, waits for
        /// the upstream's `ack`, then ends with close_notify (`notify`) or with a FIN on the
        /// raw socket and none (`truncate`), and reads on until the relay closes.
        static let client = #"""
            import socket, ssl, sys
            port, target, ca, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
            context = ssl.create_default_context(cafile=ca)
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
            tls.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            head = b""
            for _ in range(100):
                if b"\r\n\r\n" in head:
                    break
                head += tls.recv(4096)
            print(head.split(b"\r\n")[0].decode())
            tls.sendall(b"partial upload")
            ack = b""
            for _ in range(100):
                if ack == b"ack":
                    break
                ack += tls.recv(3 - len(ack))
            print(ack.decode())
            if mode == "truncate":
                raw.shutdown(socket.SHUT_WR)
                try:
                    for _ in range(100):
                        if not raw.recv(4096):
                            break
                    print("end: eof")
                except ConnectionResetError:
                    print("end: reset")
            else:
                tls.unwrap()
                print("end: close_notify")
            """#

        /// The upstream: takes the upload, answers `ack`, then reads to the stream's end and
        /// says how it ended; on EOF it ends its own stream.
        final class Witness: UpstreamServer, @unchecked Sendable {
            private let seen = Mutex<String?>(nil)

            override init() throws {
                try super.init()
                start()
            }

            /// `eof after <upload>`, `reset after <upload>` or `timeout after …` once known.
            var end: String? { seen.withLock { $0 } }

            override func handle(_ socket: TestSocket, connection: Int) {
                var received: [UInt8] = []
                var end = "eof"
                do {
                    while received.count < 14 {
                        let chunk = try socket.read()
                        if chunk.isEmpty { break }
                        received += chunk
                    }
                    try socket.write("ack")
                    received += try socket.readToEOF(limit: 4096)
                    socket.shutdownWrite()
                } catch let error as SocketError {
                    end = error.isReset ? "reset" : error.isTimeout ? "timeout" : "\(error)"
                } catch {
                    end = "\(error)"
                }
                let outcome = "\(end) after \(String(decoding: received, as: UTF8.self))"
                seen.withLock { $0 = outcome }
            }
        }

        static func run(_ mode: String) throws -> (output: String, upstream: String?, row: AuditRow?, relay: String) {
            let certs = try TestCertificates()
            let upstream = try Witness()
            let relay = try RelayProcess(config: HTTPSListenerTests.config(certs, server: try certs.issueServer(),
                                                                          upstreamPorts: [upstream.port]))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)
            let result = try Subprocess.run("/usr/bin/python3", ["-c", client, "\(port)", "127.0.0.1:\(upstream.port)",
                                                                 certs.caCert, mode], timeout: 30)
            let deadline = Date().addingTimeInterval(10)
            while upstream.end == nil && Date() < deadline { usleep(20_000) }
            let row = relay.audit.waitForEvents(where: "event = 'tunnel-close'").first
            return (result.stdoutText + result.stderr, upstream.end, row, relay.stderr)
        }

        @Test("a bare FIN from the TLS client reaches the plain upstream as a reset, audited client-tls-truncated")
        func bareFINIsATruncation() throws {
            let (output, upstream, row, relay) = try Self.run("truncate")
            #expect(output.hasPrefix("HTTP/1.1 200"), "\(output)\n\(relay)")
            #expect(output.contains("ack\n"), "the tunnel relayed both ways first: \(output)")
            #expect(upstream == "reset after partial upload", "not an orderly end: \(upstream ?? "nil")")
            #expect(row?["reason"] == "client-tls-truncated", "\(row.map { "\($0)" } ?? "no row")")
            #expect(row?["bytes_up"] == "14")
        }

        @Test("close_notify from the TLS client reaches the plain upstream as its FIN, audited completed")
        func closeNotifyIsAnEnd() throws {
            let (output, upstream, row, relay) = try Self.run("notify")
            #expect(output.contains("end: close_notify"), "\(output)\n\(relay)")
            #expect(upstream == "eof after partial upload", "an orderly end: \(upstream ?? "nil")")
            #expect(row?["reason"] == "completed", "\(row.map { "\($0)" } ?? "no row")")
        }
    }
}
