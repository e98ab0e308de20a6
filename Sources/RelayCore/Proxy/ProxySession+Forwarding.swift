/// A forwarded request and its response, streamed: the request body goes up as it
/// arrives, the response head is rewritten for the client and its body goes down, each
/// framed by its own `BodyFramer`; the exchange ends with its close row.
extension ProxySession {
    /// One forwarded request and its response, with what its close row reports.
    struct Exchange {
        var request: Request
        var requestFramer: BodyFramer
        var requestDone: Bool
        var responseParser: HTTPResponseHeadParser
        var responseHeadSent = false
        var status: Int?
        var responseFramer: BodyFramer?
        var responseFraming: BodyFraming?
        /// An HTTP/1.0 client cannot read chunked: its body is sent de-chunked, ended by close.
        var dechunk = false
        /// Whether any response byte arrived (a request that got none may be retried).
        var sawResponseBytes = false
        var closeAfter: Bool
        var upstreamWantsClose = false
        var bytesUp: Int64 = 0
        var bytesDown: Int64 = 0
    }

    mutating func forwardRequestBody(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange,
                                             now: UInt64, into actions: inout [ProxySessionAction]) {
        switch exchange.requestFramer.consume(bytes) {
        case .body(let count):
            sendUp(bytes, count: count, exchange: &exchange, into: &actions)
            state = .forwarding(exchange)
        case .done(let count):
            sendUp(bytes, count: count, exchange: &exchange, into: &actions)
            exchange.requestDone = true
            // Whatever follows is the next (pipelined) request; it waits for this response.
            clientBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[count...]))
            state = .forwarding(exchange)
        case .invalid(let reason):
            // The close row carries the status the client got: this refusal's, or the
            // response head's when one went out already (it cannot be replaced then).
            if !exchange.responseHeadSent {
                let status = reason.refusalStatus ?? 400
                let refusal = ProxyResponses.refusal(reason, status: status)
                exchange.status = status
                exchange.bytesDown += Int64(refusal.count)
                actions.append(.sendToClient(refusal))
            }
            actions.append(.audit(Self.closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
            closeAll(into: &actions, cutting: exchange)
        }
    }

    private func sendUp(_ bytes: UnsafeRawBufferPointer, count: Int, exchange: inout Exchange,
                        into actions: inout [ProxySessionAction]) {
        guard count > 0 else { return }
        exchange.bytesUp += Int64(count)
        actions.append(.sendToUpstream(Array(UnsafeRawBufferPointer(rebasing: bytes[..<count]))))
    }

    mutating func forwardResponse(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange, now: UInt64,
                                          into actions: inout [ProxySessionAction]) {
        if !bytes.isEmpty {
            exchange.sawResponseBytes = true
        }
        if exchange.responseFramer == nil {
            upstreamBuffer.append(contentsOf: bytes)
            while exchange.responseFramer == nil {
                let result = upstreamBuffer.withUnsafeBytes { exchange.responseParser.parse($0) }
                switch result {
                case .needMore:
                    state = .forwarding(exchange)
                    return
                case .invalid:
                    return failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
                case .complete(let head, let headLength):
                    upstreamBuffer.removeFirst(headLength)
                    exchange.responseParser.reset()
                    if !acceptResponseHead(head, exchange: &exchange, now: now, into: &actions) { return }
                }
            }
            let body = upstreamBuffer
            upstreamBuffer = []
            body.withUnsafeBytes { forwardResponseBody($0, exchange: &exchange, now: now, into: &actions) }
        } else {
            forwardResponseBody(bytes, exchange: &exchange, now: now, into: &actions)
        }
    }

    /// Sends a response head on; returns false when the exchange ended because of it.
    private mutating func acceptResponseHead(_ head: HTTPResponseHead, exchange: inout Exchange, now: UInt64,
                                             into actions: inout [ProxySessionAction]) -> Bool {
        if head.status == 101 {
            // Upgrade is hop-by-hop and was stripped from the request; a 101 is a protocol violation.
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        if (100..<200).contains(head.status) {
            // HTTP/1.0 defined no 1xx (RFC 9110 15.2): its client would take one for the answer.
            if exchange.request.head.version == .http1_0 { return true }
            let interim = ForwardRewriter.clientResponse(Self.withoutBodyFraming(head), viaName: settings.viaName,
                                                         closeAfter: false)
            exchange.bytesDown += Int64(interim.count)
            actions.append(.sendToClient(interim))
            return true
        }
        let framing: BodyFraming
        switch MessageFraming.response(head, requestMethod: exchange.request.head.method) {
        case .success(let value): framing = value
        case .failure:
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        if exchange.request.head.version == .http1_0, framing != .none, head.headers.contains("transfer-encoding"),
           !MessageFraming.isChunkedOnly(head.headers) {
            // An HTTP/1.0 client knows no transfer coding (RFC 9112 6.1): de-chunking would
            // hand it `gzip` bytes labelled as nothing.
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
            return false
        }
        exchange.upstreamWantsClose = ForwardRewriter.wantsClose(version: head.version, headers: head.headers)
            || framing == .untilClose
        var clientHead = head.status == 204 ? Self.withoutBodyFraming(head) : head
        if framing == .chunked && exchange.request.head.version == .http1_0 {
            // The relay must speak HTTP/1.1 upstream, so a chunked answer can come back to a
            // 1.0 client that cannot read chunked: send it the payload, delimited by close.
            exchange.dechunk = true
            clientHead.headers.remove("transfer-encoding")
        }
        if framing == .untilClose || !exchange.requestDone || exchange.dechunk {
            exchange.closeAfter = true
        }
        let rewritten = ForwardRewriter.clientResponse(clientHead, viaName: settings.viaName, closeAfter: exchange.closeAfter)
        exchange.bytesDown += Int64(rewritten.count)
        exchange.status = head.status
        exchange.responseHeadSent = true
        exchange.responseFramer = BodyFramer(framing)
        exchange.responseFraming = framing
        actions.append(.sendToClient(rewritten))
        return true
    }

    /// A 1xx or 204 head without Content-Length and Transfer-Encoding, which RFC 9110 8.6
    /// and RFC 9112 6.1 forbid there: such a response has no body, and a client that believed
    /// either field would read the next response as this one's body.
    private static func withoutBodyFraming(_ head: HTTPResponseHead) -> HTTPResponseHead {
        var stripped = head
        stripped.headers.remove("content-length")
        stripped.headers.remove("transfer-encoding")
        return stripped
    }

    private mutating func forwardResponseBody(_ bytes: UnsafeRawBufferPointer, exchange: inout Exchange, now: UInt64,
                                              into actions: inout [ProxySessionAction]) {
        guard var framer = exchange.responseFramer else { return }
        let progress: BodyProgress
        var payload: [UInt8] = []
        if framer.isComplete {
            progress = .done(0)
        } else if exchange.dechunk {
            progress = framer.consume(bytes) { range in
                payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
            }
        } else {
            progress = framer.consume(bytes)
        }
        exchange.responseFramer = framer
        switch progress {
        case .body(let count):
            sendDown(bytes, count: count, payload: exchange.dechunk ? payload : nil, exchange: &exchange, into: &actions)
            state = .forwarding(exchange)
        case .done(let count):
            sendDown(bytes, count: count, payload: exchange.dechunk ? payload : nil, exchange: &exchange, into: &actions)
            if count < bytes.count {
                // Bytes after a complete response: the upstream is out of step; never reuse it.
                exchange.upstreamWantsClose = true
            }
            finishExchange(exchange, now: now, into: &actions)
        case .invalid:
            failUpstream(&exchange, reason: .badUpstreamResponse, now: now, into: &actions)
        }
    }

    /// Sends the first `count` bytes on, or only `payload` (their de-chunked content) when given.
    private func sendDown(_ bytes: UnsafeRawBufferPointer, count: Int, payload: [UInt8]?, exchange: inout Exchange,
                          into actions: inout [ProxySessionAction]) {
        let out = payload ?? Array(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        guard !out.isEmpty else { return }
        exchange.bytesDown += Int64(out.count)
        actions.append(.sendToClient(out))
    }

    private mutating func finishExchange(_ exchange: Exchange, now: UInt64, into actions: inout [ProxySessionAction]) {
        actions.append(.audit(Self.closeEntry(exchange, reason: .completed, now: now), awaitCommit: false))
        if exchange.closeAfter || !exchange.requestDone {
            return closeAll(into: &actions)
        }
        if exchange.upstreamWantsClose {
            upstream = nil
            actions.append(.closeUpstream)
        }
        state = .readingHead
        if !clientBuffer.isEmpty {
            processHead(now: now, into: &actions)
        }
    }

    /// The upstream ended or broke mid-exchange.
    mutating func upstreamEnded(_ exchange: inout Exchange, reason: ReasonCode, now: UInt64,
                                        into actions: inout [ProxySessionAction]) {
        if reason == .upstreamClosed, exchange.responseFraming == .untilClose {
            // A body framed by close is complete exactly when the upstream closes.
            exchange.closeAfter = true
            return finishExchange(exchange, now: now, into: &actions)
        }
        if Self.mayRetryOnAFreshConnection(exchange) {
            // A kept-alive upstream closed as this request crossed its close (servers drop
            // idle connections whenever they like). Nothing of a response came back and the
            // request is safe to repeat, so it goes again, once, on a fresh connection,
            // under its open row.
            upstream = nil
            actions.append(.closeUpstream)
            var retry = exchange.request
            retry.onReusedLink = false
            return open(retry, openRow: .stored, now: now, into: &actions)
        }
        failUpstream(&exchange, reason: reason, now: now, into: &actions)
    }

    /// Only a bodiless request with a safe method (RFC 9110 9.2.1), sent on a reused
    /// connection, that got no response byte at all.
    private static func mayRetryOnAFreshConnection(_ exchange: Exchange) -> Bool {
        guard exchange.request.onReusedLink, !exchange.sawResponseBytes,
              case .forward(_, _, .none, _) = exchange.request.kind else { return false }
        return ["GET", "HEAD", "OPTIONS", "TRACE"].contains(exchange.request.head.method)
    }

    private mutating func failUpstream(_ exchange: inout Exchange, reason: ReasonCode, now: UInt64,
                                       into actions: inout [ProxySessionAction]) {
        if !exchange.responseHeadSent {
            let refusal = ProxyResponses.refusal(reason, status: 502)
            exchange.status = 502
            exchange.bytesDown += Int64(refusal.count)
            actions.append(.sendToClient(refusal))
        }
        actions.append(.audit(Self.closeEntry(exchange, reason: reason, now: now), awaitCommit: false))
        closeAll(into: &actions, cutting: exchange)
    }

    /// The client closed its side during the exchange.
    mutating func clientEnded(_ exchange: Exchange, now: UInt64, into actions: inout [ProxySessionAction]) {
        if exchange.requestDone {
            // A client may half-close after its request; finish the response, then close.
            var finishing = exchange
            finishing.closeAfter = true
            state = .forwarding(finishing)
        } else {
            actions.append(.audit(Self.closeEntry(exchange, reason: .clientClosed, now: now), awaitCommit: false))
            closeAll(into: &actions, cutting: exchange)
        }
    }
}
