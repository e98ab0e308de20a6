import Testing
@testable import RelayCore

/// Lets the split-feeding helpers drive either head parser.
protocol IncrementalHeadParser {
    associatedtype Head: Equatable
    init(limits: HTTPHeadLimits)
    mutating func parse(_ buffer: UnsafeRawBufferPointer) -> HeadParseResult<Head>
}

extension HTTPRequestHeadParser: IncrementalHeadParser {}
extension HTTPResponseHeadParser: IncrementalHeadParser {}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

enum Feed {
    /// Feeds the accumulated buffer growing to each of `cuts` (then to the whole input),
    /// stopping at the first verdict, as a connection reading in pieces would.
    static func head<P: IncrementalHeadParser>(_ type: P.Type, _ input: [UInt8], cuts: [Int], limits: HTTPHeadLimits) -> HeadParseResult<P.Head> {
        var parser = P(limits: limits)
        for end in cuts + [input.count] {
            let result = input.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<end])) }
            if case .needMore = result { continue }
            return result
        }
        return .needMore
    }

    /// The verdict on `input` fed whole, then asserts the same verdict when it is split at every
    /// offset into two reads (when `everySplit`) and fed one byte at a time.
    @discardableResult
    static func headAllWays<P: IncrementalHeadParser>(_ type: P.Type, _ input: [UInt8], limits: HTTPHeadLimits = HTTPHeadLimits(),
                                                     everySplit: Bool = true,
                                                     sourceLocation: Testing.SourceLocation = #_sourceLocation) -> HeadParseResult<P.Head> {
        let whole = head(type, input, cuts: [], limits: limits)
        if everySplit {
            for k in 0...input.count {
                let split = head(type, input, cuts: [k], limits: limits)
                if split != whole {
                    Issue.record("split at \(k) gave \(split), whole gave \(whole)", sourceLocation: sourceLocation)
                    break
                }
            }
        }
        let single = head(type, input, cuts: Array(0..<input.count), limits: limits)
        #expect(single == whole, "byte-by-byte differs from whole", sourceLocation: sourceLocation)
        return whole
    }

    static func request(_ text: String, limits: HTTPHeadLimits = HTTPHeadLimits(),
                        sourceLocation: Testing.SourceLocation = #_sourceLocation) -> HeadParseResult<HTTPRequestHead> {
        headAllWays(HTTPRequestHeadParser.self, bytes(text), limits: limits, sourceLocation: sourceLocation)
    }

    static func response(_ text: String, limits: HTTPHeadLimits = HTTPHeadLimits(),
                         sourceLocation: Testing.SourceLocation = #_sourceLocation) -> HeadParseResult<HTTPResponseHead> {
        headAllWays(HTTPResponseHeadParser.self, bytes(text), limits: limits, sourceLocation: sourceLocation)
    }

    /// Outcome of streaming `input` through a framer in pieces ending at `cuts`: the absolute
    /// offset where the message ended, the first fault, or how much was accepted as body.
    enum BodyOutcome: Equatable {
        case done(at: Int)
        case invalid(ReasonCode)
        case open(accepted: Int)
    }

    static func body(_ framing: BodyFraming, _ input: [UInt8], cuts: [Int], limits: HTTPHeadLimits = HTTPHeadLimits()) -> BodyOutcome {
        var framer = BodyFramer(framing, limits: limits)
        var start = 0
        for end in cuts + [input.count] where end >= start {
            let progress = input.withUnsafeBytes { framer.consume(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
            switch progress {
            case .body(let n):
                guard n == end - start else { return .invalid(.internalError) }
                start = end
            case .done(let n):
                guard n <= end - start, framer.isComplete, framer.bodyBytesSeen == UInt64(start + n) else {
                    return .invalid(.internalError)
                }
                return .done(at: start + n)
            case .invalid(let code):
                return .invalid(code)
            }
        }
        return .open(accepted: start)
    }

    /// Body outcome fed whole, asserting the same outcome for every two-way split and byte by byte.
    @discardableResult
    static func bodyAllWays(_ framing: BodyFraming, _ input: [UInt8], limits: HTTPHeadLimits = HTTPHeadLimits(),
                            sourceLocation: Testing.SourceLocation = #_sourceLocation) -> BodyOutcome {
        let whole = body(framing, input, cuts: [], limits: limits)
        for k in 0...input.count {
            let split = body(framing, input, cuts: [k], limits: limits)
            if split != whole {
                Issue.record("split at \(k) gave \(split), whole gave \(whole)", sourceLocation: sourceLocation)
                break
            }
        }
        let single = body(framing, input, cuts: Array(0..<input.count), limits: limits)
        #expect(single == whole, "byte-by-byte differs from whole", sourceLocation: sourceLocation)
        return whole
    }
}

extension HeadParseResult {
    /// The head when complete, for tests that go on to inspect it.
    var head: Head? {
        if case .complete(let head, _) = self { return head }
        return nil
    }

    var reason: ReasonCode? {
        if case .invalid(let code) = self { return code }
        return nil
    }

    var headLength: Int? {
        if case .complete(_, let length) = self { return length }
        return nil
    }
}
