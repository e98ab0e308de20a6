import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// RFC 9110/9112 rules on the wire: raw sockets where the exact bytes matter, curl
    /// where a real client's reading does.
    @Suite("HTTP conformance")
    struct ConformanceTests {
        /// A relay registering `origin`, and the origin's `host:port`.
        static func relay(for origin: UpstreamServer) throws -> (RelayProcess, String) {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            return (relay, "127.0.0.1:\(origin.port)")
        }

        @Test("a response whose final coding is not chunked is relayed until the server closes")
        func responseTransferCodingEndsAtClose() throws {
            let body = "not chunked, ended by close"
            let origin = try CannedHTTPOrigin(reply: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + body, closeAfter: true)
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write("GET http://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            let response = try ProxyClient.readResponse(socket)
            #expect(response.status == 200)
            #expect(response.header("transfer-encoding") == "gzip")
            #expect(response.header("connection") == "close")
            #expect(response.bodyText == body)
            let close = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", [authority])
            #expect(close.first?["reason"] == "completed", "audit:\n\(relay.audit.dump())")
        }
    }
}
