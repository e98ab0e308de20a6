import Testing
@testable import RelayCore

@Suite("HTTP fuzz (seeded)")
struct HTTPFuzzTests {
    static let requestSeeds = [
        "GET http://app.corp:8080/x?y=1 HTTP/1.1\r\nHost: app.corp:8080\r\nAccept: */*\r\n\r\n",
        "CONNECT app1.corp.example:443 HTTP/1.1\r\nHost: app1.corp.example:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n4\r\nWiki\r\n0\r\n\r\n",
        "\r\nGET / HTTP/1.0\r\nX: \t v \r\n\r\n",
    ]
    static let responseSeeds = [
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVia: 1.1 up\r\n\r\nhi",
        "HTTP/1.0 404\r\n\r\n",
        "HTTP/1.1 204 \r\nX: y\r\n\r\n",
    ]
    static let interesting: [UInt8] = [0x0D, 0x0A, 0x20, 0x09, 0x3A, 0x00, 0x7F, 0xFF, 0x2F, 0x3B, 0x22, 0x5C, 0x30, 0x66, 0x48]

    static func mutate(_ seed: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var out = seed
        let edits = Int.random(in: 1...4, using: &rng)
        for _ in 0..<edits {
            let position = out.isEmpty ? 0 : Int.random(in: 0..<out.count, using: &rng)
            let byte = Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where !out.isEmpty: out[position] = byte
            case 1: out.insert(byte, at: position)
            case 2 where !out.isEmpty: out.remove(at: position)
            case 3 where !out.isEmpty:
                let end = min(out.count, position + Int.random(in: 1...8, using: &rng))
                out.insert(contentsOf: Array(out[position..<end]), at: position)
            default: out = Array(out[0..<position])
            }
        }
        return out
    }

    @Test func mutatedHeadsParseTheSameHoweverSplit() {
        var rng = SplitMix64(state: 0xD1_2E_1A_7)
        let limits = HTTPHeadLimits(maxHeadBytes: 512, maxHeaders: 8)
        var outcomes = [0, 0, 0]
        for iteration in 0..<20_000 {
            let isRequest = iteration % 3 != 2
            let seeds = isRequest ? Self.requestSeeds : Self.responseSeeds
            let input: [UInt8]
            if iteration % 10 == 9 {
                input = (0..<Int.random(in: 0...64, using: &rng)).map { _ in Self.interesting.randomElement(using: &rng)! }
            } else {
                input = Self.mutate(Array(seeds.randomElement(using: &rng)!.utf8), &rng)
            }
            let cut = Int.random(in: 0...input.count, using: &rng)
            let consistent: Bool
            if isRequest {
                let whole = Feed.head(HTTPRequestHeadParser.self, input, cuts: [], limits: limits)
                var same = Feed.head(HTTPRequestHeadParser.self, input, cuts: [cut], limits: limits) == whole
                if iteration % 16 == 0 {
                    same = same && Feed.head(HTTPRequestHeadParser.self, input, cuts: Array(0..<input.count), limits: limits) == whole
                }
                consistent = same
                tally(whole, &outcomes)
                if case .complete(let head, let length) = whole {
                    #expect(length <= input.count)
                    _ = MessageFraming.request(head)
                    _ = RequestTarget.parse(method: head.method, target: head.target)
                    // Whatever parsed must rewrite into something that parses back.
                    let rewritten = ForwardRewriter.upstreamRequest(head, hostHeader: "h", pathAndQuery: "/", viaName: "dynrelay")
                    #expect(Feed.head(HTTPRequestHeadParser.self, rewritten, cuts: [], limits: HTTPHeadLimits()).headLength == rewritten.count)
                }
            } else {
                let whole = Feed.head(HTTPResponseHeadParser.self, input, cuts: [], limits: limits)
                var same = Feed.head(HTTPResponseHeadParser.self, input, cuts: [cut], limits: limits) == whole
                if iteration % 16 == 1 {
                    same = same && Feed.head(HTTPResponseHeadParser.self, input, cuts: Array(0..<input.count), limits: limits) == whole
                }
                consistent = same
                tally(whole, &outcomes)
                if case .complete(let head, _) = whole {
                    _ = MessageFraming.response(head, requestMethod: "GET")
                    let rewritten = ForwardRewriter.clientResponse(head, viaName: "dynrelay", closeAfter: true)
                    #expect(Feed.head(HTTPResponseHeadParser.self, rewritten, cuts: [], limits: HTTPHeadLimits()).headLength == rewritten.count)
                }
            }
            if !consistent {
                Issue.record("iteration \(iteration): split feeding disagreed on \(input)")
                return
            }
        }
        // The corpus must exercise all three verdicts, or the loop proves little.
        #expect(outcomes.allSatisfy { $0 > 500 }, "needMore/complete/invalid counts: \(outcomes)")
    }

    @Test func mutatedChunkedBodiesFrameTheSameHoweverSplit() {
        var rng = SplitMix64(state: 42)
        let seed = Array("4\r\nWiki\r\n5;a=\"b\"\r\npedia\r\n0\r\nX: y\r\n\r\nGET / HTTP/1.1\r\n\r\n".utf8)
        let limits = HTTPHeadLimits(maxHeadBytes: 64, maxHeaders: 4)
        for iteration in 0..<5_000 {
            let input = Self.mutate(seed, &rng)
            let whole = Feed.body(.chunked, input, cuts: [], limits: limits)
            let cut = Int.random(in: 0...input.count, using: &rng)
            let split = Feed.body(.chunked, input, cuts: [cut], limits: limits)
            let single = iteration % 8 == 0 ? Feed.body(.chunked, input, cuts: Array(0..<input.count), limits: limits) : whole
            #expect(whole != .invalid(.internalError))
            if split != whole || single != whole {
                Issue.record("iteration \(iteration): \(whole) vs \(split) vs \(single) on \(input)")
                return
            }
        }
    }

    private func tally<H>(_ result: HeadParseResult<H>, _ outcomes: inout [Int]) {
        switch result {
        case .needMore: outcomes[0] += 1
        case .complete: outcomes[1] += 1
        case .invalid: outcomes[2] += 1
        }
    }
}
