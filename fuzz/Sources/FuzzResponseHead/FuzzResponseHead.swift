import FuzzSupport
import RelayCore

/// The response head parser on upstream bytes: the same verdict however the bytes are split
/// into reads; a complete head reads back from its own verbatim serialisation; what the
/// relay would send the client for it parses again without hop-by-hop fields.
@main
enum FuzzResponseHead {
    static func main() {
        FuzzDriver.run(fuzzResponseHead)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let verdict = SplitInvariance.check(input) { ResponseHeadChecks.verdict(input, cuts: $0) }
    _ = ResponseHeadChecks.verdict(input, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 256, maxHeaders: 4))
    if case .complete(let head, let length) = verdict {
        ResponseHeadChecks.checkComplete(head, length: length, input: input)
    }
    return 0
}

/// Reading a response head in pieces, and what a complete one must satisfy.
enum ResponseHeadChecks {
    static func verdict(_ input: [UInt8], cuts: [Int], limits: HTTPHeadLimits = HTTPHeadLimits())
        -> HeadParseResult<HTTPResponseHead> {
        var parser = HTTPResponseHeadParser(limits: limits)
        return HeadFeeding.verdict(input, cuts: cuts) { parser.parse($0) }
    }

    static func checkComplete(_ head: HTTPResponseHead, length: Int, input: [UInt8]) {
        invariant(length > 0 && length <= input.count, "head length \(length) of \(input.count) bytes")
        invariant((100...599).contains(head.status), "status \(head.status)")
        let alone = verdict(Array(input[..<length]), cuts: [])
        invariant(alone == .complete(head, headLength: length), "the head alone gave \(alone)")

        let wire = HeadWire.response(head)
        let again = verdict(wire, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxHeaders: 1000))
        invariant(again == .complete(head, headLength: wire.count), "verbatim head read back as \(again)")

        for method in ["GET", "HEAD", "CONNECT", "POST"] {
            _ = MessageFraming.response(head, requestMethod: method)
        }
        _ = ForwardRewriter.wantsClose(version: head.version, headers: head.headers)
        for closeAfter in [false, true] {
            let toClient = ForwardRewriter.clientResponse(head, viaName: "dynrelay", closeAfter: closeAfter)
            guard case .complete(let sent, let sentLength) = verdict(toClient, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxHeaders: 1000)),
                  sentLength == toClient.count else {
                return invariant(false, "head for the client does not parse: \(toClient)")
            }
            invariant(sent.status == head.status, "status \(head.status) became \(sent.status)")
            invariant(!sent.headers.contains("proxy-authenticate") && !sent.headers.contains("keep-alive")
                      && !sent.headers.contains("upgrade"), "hop-by-hop fields sent on")
            invariant(!closeAfter || sent.headers.tokens("connection") == ["close"], "Connection: close missing")
        }
    }
}
