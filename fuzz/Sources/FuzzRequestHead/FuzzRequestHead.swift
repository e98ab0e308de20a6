import FuzzSupport
import RelayCore

/// The request head parser on client bytes: the same verdict however the bytes are split
/// into reads; a complete head reads back from its own verbatim serialisation; what the
/// relay would forward for it parses again and carries no proxy credentials.
@main
enum FuzzRequestHead {
    static func main() {
        FuzzDriver.run(fuzzRequestHead)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRequestHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let verdict = SplitInvariance.check(input) { RequestHeadChecks.verdict(input, cuts: $0) }
    // Tight limits take the refusal paths the defaults leave for huge inputs.
    _ = RequestHeadChecks.verdict(input, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 256, maxHeaders: 4))
    if case .complete(let head, let length) = verdict {
        RequestHeadChecks.checkComplete(head, length: length, input: input)
    }
    return 0
}

/// Reading a request head in pieces, and what a complete one must satisfy.
enum RequestHeadChecks {
    static func verdict(_ input: [UInt8], cuts: [Int], limits: HTTPHeadLimits = HTTPHeadLimits())
        -> HeadParseResult<HTTPRequestHead> {
        var parser = HTTPRequestHeadParser(limits: limits)
        return HeadFeeding.verdict(input, cuts: cuts) { parser.parse($0) }
    }

    static func checkComplete(_ head: HTTPRequestHead, length: Int, input: [UInt8]) {
        invariant(length > 0 && length <= input.count, "head length \(length) of \(input.count) bytes")
        // The head is judged on its own bytes: what follows it cannot change it.
        let alone = verdict(Array(input[..<length]), cuts: [])
        invariant(alone == .complete(head, headLength: length), "the head alone gave \(alone)")

        let wire = HeadWire.request(head)
        let again = verdict(wire, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxHeaders: 1000))
        invariant(again == .complete(head, headLength: wire.count), "verbatim head read back as \(again)")

        _ = MessageFraming.request(head)
        _ = MaxForwards.parse(head.headers)
        var hostHeader = "h"
        var pathAndQuery = "/"
        if case .success(.absolute(let scheme, let host, let port, let path)) = RequestTarget.parse(method: head.method, target: head.target) {
            hostHeader = ForwardRewriter.hostHeaderValue(scheme: scheme, host: host, port: port)
            pathAndQuery = path
            _ = HostNormalizer.normalize(host.text, bracketed: host.bracketed)
        }
        let forwarded = ForwardRewriter.upstreamRequest(head, hostHeader: hostHeader, pathAndQuery: pathAndQuery, viaName: "dynrelay")
        guard case .complete(let sent, let sentLength) = verdict(forwarded, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxHeaders: 1000)),
              sentLength == forwarded.count else {
            return invariant(false, "forwarded head does not parse: \(forwarded)")
        }
        invariant(!sent.headers.contains("proxy-authorization") && !sent.headers.contains("proxy-connection"),
                  "proxy credentials or hop-by-hop fields forwarded")
        invariant(sent.headers.values("host") == [hostHeader], "forwarded Host fields \(sent.headers.values("host"))")
        invariant(sent.headers.contains("via"), "no Via on the forwarded head")
    }
}
