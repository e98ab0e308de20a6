import Foundation
import Glibc
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// The client library's transport against the real binary: TLS to an app server inside
    /// a tunnel through the HTTPS listener (TLS inside TLS), and what an idle stream costs.
    @Suite("Client transport")
    struct ClientTransportTests {
        static let options = ClientTransportOptions(connectTimeout: .seconds(10), tlsHandshakeTimeout: .seconds(10),
                                                    idleTimeout: .seconds(10))

        /// Reads one byte at a time through the blank line, so nothing behind the head is taken.
        static func readHead(_ stream: any ClientByteStream) async throws -> String {
            var head: [UInt8] = []
            while !head.suffix(4).elementsEqual("\r\n\r\n".utf8), head.count < 4096 {
                let byte = try await stream.read(maxBytes: 1)
                if byte.isEmpty { break }
                head += byte
            }
            return String(decoding: head, as: UTF8.self)
        }

        @Test("TLS to an app server inside a CONNECT tunnel over the relay's HTTPS listener")
        func tlsInsideTLS() async throws {
            let certs = try TestCertificates()
            let pki = try TestPKI()
            let originIdentity = try pki.issue("origin", names: TestPKI.loopbackNames)
            let origin = try TLSAppServer(cert: originIdentity.cert, key: originIdentity.key)
            defer { origin.stop() }
            // A name, so the inner handshake carries the SNI the relay's tunnel policy wants; the
            // address too, which the loopback guard needs registered.
            let rules = "server localhost:\(origin.port)\nserver 127.0.0.1:\(origin.port)\n"
            let relay = try RelayProcess(config: HTTPSListenerTests.config(certs, server: try certs.issueServer(),
                                                                           extra: rules, upstreamPorts: []))
            defer { relay.stop() }
            let port = try #require(relay.tlsPorts.first)

            let tcp = try await TCPClientStream.connect(host: "127.0.0.1", port: port, options: Self.options)
            let outer = try await TLSClientStream.connect(over: tcp, host: "127.0.0.1", port: port,
                                                          tls: ClientTLSOptions(caFile: certs.caCert), options: Self.options)
            defer { outer.close() }
            let target = "localhost:\(origin.port)"
            try await outer.write(Array("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n".utf8))
            let head = try await Self.readHead(outer)
            #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)\n\(relay.stderr)")

            let inner = try await TLSClientStream.connect(over: outer, host: "localhost", port: origin.port,
                                                          tls: ClientTLSOptions(caFile: pki.caFile), options: Self.options)
            #expect(outer.negotiatedVersion == .tls1_3)
            #expect(inner.negotiatedVersion == .tls1_3)
            try await inner.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
            var answer: [UInt8] = []
            for _ in 0..<1000 {
                let chunk = try await inner.read(maxBytes: 16_384)
                if chunk.isEmpty { break }
                answer += chunk
            }
            let text = String(decoding: answer, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.0 200"), "\(text)")
            #expect(text.contains(TLSOrigin.greeting), "s_server's status page came back through both layers")
            inner.close()
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.count == 1, "\(relay.audit.dump())")
            #expect(close.first?["client_tls_version"] == "TLSv1.3")
        }

        /// Resident memory of this process, in KiB.
        static func residentKiB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }

        @Test("memory per idle open stream, plain and TLS (printed, not asserted)")
        func memoryPerIdleStream() async throws {
            let certs = try TestCertificates()
            let relay = try RelayProcess(config: HTTPSListenerTests.config(certs, server: try certs.issueServer(),
                                                                           upstreamPorts: [9]))
            defer { relay.stop() }
            let tlsPort = try #require(relay.tlsPorts.first)
            let count = 200
            let tls = ClientTLSOptions(caFile: certs.caCert)

            var plain: [TCPClientStream] = []
            // One of each first, so the loop, the resolver and the TLS context are built
            // before the baseline.
            plain.append(try await TCPClientStream.connect(host: "127.0.0.1", port: relay.proxyPort, options: Self.options))
            var secure: [TLSClientStream] = []
            secure.append(try await TLSClientStream.connect(
                over: try await TCPClientStream.connect(host: "127.0.0.1", port: tlsPort, options: Self.options),
                host: "127.0.0.1", port: tlsPort, tls: tls, options: Self.options))

            let rss0 = Self.residentKiB()
            for _ in 0..<count {
                plain.append(try await TCPClientStream.connect(host: "127.0.0.1", port: relay.proxyPort, options: Self.options))
            }
            let rss1 = Self.residentKiB()
            for _ in 0..<count {
                let tcp = try await TCPClientStream.connect(host: "127.0.0.1", port: tlsPort, options: Self.options)
                secure.append(try await TLSClientStream.connect(over: tcp, host: "127.0.0.1", port: tlsPort, tls: tls,
                                                                options: Self.options))
            }
            let rss2 = Self.residentKiB()
            print("client transport memory per idle stream over \(count) streams:"
                  + " plain \((rss1 - rss0) * 1024 / count) B resident, TLS \((rss2 - rss1) * 1024 / count) B resident")
            #expect(plain.count == count + 1 && secure.count == count + 1)
            for stream in plain { stream.close() }
            for stream in secure { stream.close() }
        }
    }
}
