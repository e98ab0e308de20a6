import FuzzSupport
import RelayCore

/// The chunked body framer on a body stream: the same end, fault and payload however the
/// stream is split into reads; the payload it reports never exceeds the bytes it was given;
/// a body it accepted, re-chunked as one chunk, frames to the same payload.
@main
enum FuzzChunkedBody {
    static func main() {
        FuzzDriver.run(fuzzChunkedBody)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzChunkedBody(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = SplitInvariance.check(input, byteByByteLimit: 4096) { ChunkedFraming.run(input, cuts: $0) }
    // Tight trailer limits take the refusal paths the defaults leave for huge inputs.
    _ = ChunkedFraming.run(input, cuts: [], limits: HTTPHeadLimits(maxHeadBytes: 64, maxHeaders: 2))

    if case .done = whole.end {
        var rechunked = whole.payload.isEmpty ? [] : Array(String(whole.payload.count, radix: 16).utf8) + [0x0D, 0x0A] + whole.payload + [0x0D, 0x0A]
        rechunked += Array("0\r\n\r\n".utf8)
        let again = ChunkedFraming.run(rechunked, cuts: [])
        invariant(again == ChunkedFraming.Outcome(end: .done(at: rechunked.count), payload: whole.payload),
                  "re-chunked payload framed as \(again)")
    }
    return 0
}

/// Streams bytes through a chunked `BodyFramer`, checking what each call reports.
enum ChunkedFraming {
    /// Where the stream stopped.
    enum End: Equatable {
        /// The body ended after this many bytes of the stream.
        case done(at: Int)
        case invalid(ReasonCode)
        /// Every byte was accepted and more body is due.
        case open
    }

    /// Where the stream stopped and what it carried.
    struct Outcome: Equatable {
        var end: End
        /// The de-chunked payload reported up to the end or fault.
        var payload: [UInt8]
    }

    static func run(_ input: [UInt8], cuts: [Int], limits: HTTPHeadLimits = HTTPHeadLimits()) -> Outcome {
        var framer = BodyFramer(.chunked, limits: limits)
        var payload: [UInt8] = []
        var start = 0
        for end in cuts + [input.count] where end >= start {
            let count = end - start
            var reported: [Range<Int>] = []
            let progress = input.withUnsafeBytes { whole in
                framer.consume(UnsafeRawBufferPointer(rebasing: whole[start..<end])) { reported.append($0) }
            }
            var previousEnd = 0
            for range in reported {
                invariant(range.lowerBound >= previousEnd && range.upperBound <= count && !range.isEmpty,
                          "payload range \(range) in a read of \(count) after \(previousEnd)")
                previousEnd = range.upperBound
                payload += input[(start + range.lowerBound)..<(start + range.upperBound)]
            }
            switch progress {
            case .body(let taken):
                invariant(taken == count, "took \(taken) of \(count) bytes without ending")
                invariant(framer.bodyBytesSeen == UInt64(end), "saw \(framer.bodyBytesSeen) of \(end) bytes")
                start = end
            case .done(let taken):
                invariant(taken <= count && previousEnd <= taken, "ended after \(taken) of \(count), payload to \(previousEnd)")
                invariant(framer.isComplete && framer.bodyBytesSeen == UInt64(start + taken), "done but not complete")
                let after = framer.consume(UnsafeRawBufferPointer(start: nil, count: 0))
                invariant(after == .done(0), "after the end: \(after)")
                return Outcome(end: .done(at: start + taken), payload: payload)
            case .invalid(let reason):
                let after = framer.consume(UnsafeRawBufferPointer(start: nil, count: 0))
                invariant(after == .invalid(reason), "after a fault: \(after)")
                return Outcome(end: .invalid(reason), payload: payload)
            }
        }
        invariant(!framer.isComplete, "complete without reporting done")
        return Outcome(end: .open, payload: payload)
    }
}
