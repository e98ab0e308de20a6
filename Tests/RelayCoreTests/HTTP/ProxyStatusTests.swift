import Testing
@testable import RelayCore

/// The relay's refusals say they are the relay's (RFC 9209 `Proxy-Status`), so a client can
/// tell them from the app server's answers with the same status.
@Suite struct ProxyStatusTests {
    @Test func aRefusalNamesTheRelayItsErrorTypeAndTheReasonCode() {
        let text = String(decoding: ProxyResponses.refusal(.notRegistered), as: UTF8.self)
        #expect(text == "HTTP/1.1 403 Forbidden\r\n"
                + "Proxy-Status: dynrelay; error=http_request_denied; details=\"not-registered\"\r\n"
                + "Content-Type: text/plain\r\nContent-Length: 15\r\nConnection: close\r\n\r\nnot-registered\n")
    }

    @Test func upstreamFailuresGetTheirRFC9209Types() {
        let expected: [(ReasonCode, String)] = [
            (.resolveFailed, "dns_error"), (.upstreamRefused, "connection_refused"),
            (.upstreamUnreachable, "destination_unavailable"), (.upstreamTimeout, "connection_timeout"),
            (.upstreamCertHostMismatch, "tls_certificate_error"), (.upstreamTLSVersion, "tls_protocol_error"),
            (.relayLoop, "proxy_loop_detected"), (.overloaded, "proxy_internal_response"),
            (.internalError, "proxy_internal_error"), (.badRequestLine, "http_request_error"), (.lockedOut, "http_request_denied"),
        ]
        for (reason, type) in expected {
            #expect(reason.proxyStatusError == type, "\(reason)")
            let text = String(decoding: ProxyResponses.refusal(reason), as: UTF8.self)
            #expect(text.contains("\r\nProxy-Status: dynrelay; error=\(type); details=\"\(reason.rawValue)\"\r\n"), "\(reason)")
        }
    }

    @Test func a407CarriesNoProxyStatusAndNormalClosesHaveNoType() {
        #expect(!String(decoding: ProxyResponses.refusal(.authRequired), as: UTF8.self).contains("Proxy-Status"))
        #expect(ReasonCode.completed.proxyStatusError == nil)
        #expect(ReasonCode.authRequired.proxyStatusError == nil)
    }
}

/// Telling the proxy's own answer from the server's: the last `Proxy-Status` member with an
/// `error`, or squid's `X-Squid-Error`.
@Suite struct RelayGeneratedResponseTests {
    @Test func theRelaysRefusalIsRecognisedWithItsReasonCode() throws {
        let own = try #require(RelayGeneratedResponse(HTTPHeaders([("Proxy-Status", "dynrelay; error=http_request_denied; details=\"not-registered\"")])))
        #expect(own.proxy == "dynrelay" && own.error == "http_request_denied" && own.reasonCode == "not-registered")
    }

    @Test func onlyTheLastMemberCountsAndQuotedCommasDoNotSplit() throws {
        let headers = HTTPHeaders([("Proxy-Status", "inner; error=connection_refused, edge; received-status=200; details=\"a, b\"")])
        #expect(RelayGeneratedResponse(headers) == nil, "the member closest to the client relayed the answer")
        let chained = HTTPHeaders([("Proxy-Status", "inner; received-status=200"), ("Proxy-Status", "edge; error=\"x\"; details=\"a, \\\"b\\\"\"")])
        let own = try #require(RelayGeneratedResponse(chained))
        #expect(own.proxy == "edge" && own.error == "x" && own.reasonCode == "a, \"b\"")
    }

    @Test func squidsErrorPagesAndPlainAnswers() {
        #expect(RelayGeneratedResponse(HTTPHeaders([("X-Squid-Error", "ERR_ACCESS_DENIED 0")]))?.reasonCode == "ERR_ACCESS_DENIED")
        #expect(RelayGeneratedResponse(HTTPHeaders([("Content-Type", "text/plain")])) == nil)
        for hostile in ["", ";", "=;=", "\"", "a; error", ",,,", "a;error=\"unterminated"] {
            _ = RelayGeneratedResponse(HTTPHeaders([("Proxy-Status", hostile)]))
        }
    }
}
