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

        @Test("an HTTP/1.0 client gets no 1xx; 1xx and 204 reach a client without Content-Length")
        func interimAndBodilessResponses() throws {
            let origin = try CannedHTTPOrigin(reply: "HTTP/1.1 100 Continue\r\nContent-Length: 3\r\n\r\n"
                                                  + "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nX-After: 1\r\n\r\n")
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }

            let old = try TestSocket.connect(port: relay.proxyPort)
            try old.write("GET http://\(authority)/ HTTP/1.0\r\n\r\n")
            let seenByOld = String(decoding: try old.readToEOF(), as: UTF8.self)
            #expect(seenByOld.hasPrefix("HTTP/1.1 204 No Content\r\n"), "\(seenByOld)")
            #expect(!seenByOld.contains("100 Continue"))
            #expect(!seenByOld.lowercased().contains("content-length"))

            let current = try TestSocket.connect(port: relay.proxyPort)
            try current.write("GET http://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            let interim = try #require(try current.readHead())
            #expect(String(decoding: interim, as: UTF8.self) == "HTTP/1.1 100 Continue\r\nVia: 1.1 dynrelay\r\n\r\n")
            let final = String(decoding: try #require(try current.readHead()), as: UTF8.self)
            #expect(final.hasPrefix("HTTP/1.1 204 No Content\r\n") && final.contains("X-After: 1\r\n"), "\(final)")
            #expect(!final.lowercased().contains("content-length"))
            // Kept alive: the next request on the same connection is answered too.
            try current.write("GET http://\(authority)/again HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            _ = try #require(try current.readHead())
            #expect(String(decoding: try #require(try current.readHead()), as: UTF8.self).hasPrefix("HTTP/1.1 204 "))
        }

        @Test("curl TRACE/OPTIONS with Max-Forwards: 0 are answered by the relay, audited, no secret echoed")
        func maxForwardsZeroIsAnsweredByTheRelay() throws {
            let origin = try HTTPOrigin()
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }
            let proxy = ["-x", "http://127.0.0.1:\(relay.proxyPort)"]
            let dump = relay.directory.path + "/headers"
            let trace = try Curl.run(proxy + ["-X", "TRACE", "-H", "Max-Forwards: 0", "-H", "Cookie: sid=s3cr3t",
                                              "-H", "Authorization: Bearer s3cr3t", "-U", "alice:s3cr3t", "-H", "X-Shown: yes",
                                              "-D", dump, "http://\(authority)/trace"])
            #expect(trace.status == 0, "curl: \(trace.stderr)")
            let echo = String(decoding: trace.stdout, as: UTF8.self)
            #expect(echo.hasPrefix("TRACE http://\(authority)/trace HTTP/1.1\r\n"), "\(echo)")
            #expect(echo.contains("X-Shown: yes\r\n"))
            #expect(!echo.contains("s3cr3t") && !echo.lowercased().contains("cookie") && !echo.lowercased().contains("authorization"))
            #expect(Curl.headers(fromDump: (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "")["content-type"] == "message/http")

            let options = try Curl.run(proxy + ["-X", "OPTIONS", "-H", "Max-Forwards: 0", "-D", dump, "-o", "/dev/null",
                                                "-w", "%{http_code}", "http://\(authority)/"])
            #expect(String(decoding: options.stdout, as: UTF8.self) == "200", "curl: \(options.stderr)")
            #expect(origin.requests.isEmpty, "nothing reached the origin")

            let closes = relay.audit.waitForEvents(where: "event = 'request-close' AND reason = 'answered-by-relay'", count: 2)
            #expect(closes.count == 2, "audit:\n\(relay.audit.dump())")
            #expect(closes.allSatisfy { $0["status"] == "200" && $0["resolved"] == nil })
            let opens = try relay.audit.events(where: "event = 'request-open'", [])
            #expect(opens.count == 2, "one open row for each close row")
        }

        @Test("Max-Forwards above zero is decremented on the way to the origin")
        func maxForwardsIsDecremented() throws {
            let origin = try HTTPOrigin()
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }
            let result = try Curl.run(["-x", "http://127.0.0.1:\(relay.proxyPort)", "-X", "OPTIONS", "-H", "Max-Forwards: 3",
                                       "-o", "/dev/null", "http://\(authority)/"])
            #expect(result.status == 0, "curl: \(result.stderr)")
            #expect(origin.requests.first?.header("max-forwards") == "2")
        }

        @Test("CONNECT with Content-Length: 0 (as Java sends it) opens a working tunnel; any other length is refused")
        func connectWithContentLengthZero() throws {
            let echo = try EchoServer()
            let (relay, authority) = try Self.relay(for: echo)
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 0\r\n\r\nping")
            let established = try ProxyClient.readResponse(socket, bodyless: true)
            #expect(established.status == 200, "\(established.statusLine)")
            #expect(try socket.readExactly(4) == Array("ping".utf8), "the bytes after the head are tunnel payload")
            socket.close()

            let (refused, refusedSocket) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 4\r\n\r\nping")
            Expect.refusal(refused, status: 400, reason: "ambiguous-framing")
            #expect(ProxyClient.closes(refusedSocket))
        }

        @Test("a chunk size with whitespace before its extension reaches the origin whole")
        func chunkExtensionWhitespace() throws {
            let origin = try HTTPOrigin()
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }
            let (response, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                "POST http://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                + "5 ;e\r\nhello\r\n6\t;e=v\r\n world\r\n0\r\n\r\n")
            #expect(response.status == 200, "\(response.statusLine) \(response.bodyText)")
            #expect(response.header("x-seen-body-length") == "11")
            #expect(origin.requests.first?.bodyError == nil)
        }

        @Test("header values with obs-text reach the origin and the client byte for byte")
        func obsTextIsForwardedVerbatim() throws {
            let latin: [UInt8] = Array("caf".utf8) + [0xE9, 0x20, 0xFF]
            let origin = try CannedHTTPOrigin(reply: "HTTP/1.1 204 No Content\r\nX-Back: caf\u{E9}\r\n\r\n")
            let (relay, authority) = try Self.relay(for: origin)
            defer { relay.stop() }
            let socket = try TestSocket.connect(port: relay.proxyPort)
            try socket.write(Array("GET http://\(authority)/ HTTP/1.1\r\nHost: \(authority)\r\nX-Latin: ".utf8) + latin + [13, 10, 13, 10])
            let head = try #require(try socket.readHead())
            #expect(String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 204 "), "\(head)")
            #expect(head.firstRange(of: Array("X-Back: caf\u{E9}\r\n".utf8)) != nil, "UTF-8 comes back as sent")
            let seen = try #require(origin.heads.first)
            #expect(seen.firstRange(of: Array("\r\nX-Latin: ".utf8) + latin + [13, 10]) != nil, "the origin got \(seen)")
        }
    }
}
