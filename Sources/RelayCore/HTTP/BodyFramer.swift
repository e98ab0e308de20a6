/// Streams a message body, finding where it ends without buffering or re-encoding it.
///
/// Bytes are relayed verbatim (chunked bodies stay chunked), so the framer keeps O(1) state
/// and never copies: it only judges chunk syntax byte by byte (chunk data in bulk) and
/// reports how many leading bytes of each read belong to this message. Once it reports
/// `.done` or `.invalid` it keeps reporting `.done(0)` or the same `.invalid`.
///
/// Chunked syntax accepted (RFC 9112 7.1, with its optional whitespace only before `;`): 1 to
/// 16 hex digits, extensions `;name[=token|quoted-string]`, each `;` optionally preceded by
/// spaces or tabs (`5 ;e`, as some clients send; whitespace anywhere else, and whitespace
/// not followed by `;` such as `5 \r\n`, is refused), with the whole size line at most
/// `maxChunkLineBytes`, CRLF, exactly the announced data, CRLF; after the `0` chunk a trailer
/// section of syntactically valid field lines (no obs-fold), bounded by the head limits, then
/// CRLF. Anything else is `.badChunk`.
public struct BodyFramer: Sendable {
    /// Longest chunk-size line, extensions included, counting its CRLF.
    public static let maxChunkLineBytes = 4096

    private enum Phase: UInt8, Sendable {
        case done, failed, contentLength, untilClose
        case size, extName, extValueStart, extToken, extQuoted, extQuotedPair, extAfterQuoted, bwsBeforeSemicolon, sizeLF
        case data, dataCR, dataLF
        case trailerLineStart, trailerName, trailerValue, trailerLF, finalLF
    }

    private var phase: Phase
    /// Content-Length still expected, or the chunk size being read / chunk data remaining.
    private var remaining: UInt64 = 0
    private var digits = 0
    private var tokenLength = 0
    private var lineBytes = 0
    private var trailerBytes = 0
    private var trailerLines = 0
    private let limits: HTTPHeadLimits

    /// Wire bytes attributed to this message so far (chunk framing and trailers included):
    /// what was relayed for it, not the decoded payload size.
    public private(set) var bodyBytesSeen: UInt64 = 0

    /// Whether the whole body has been seen (immediately true for `.none` and `.contentLength(0)`).
    public var isComplete: Bool { phase == .done }

    /// Creates a framer for a body framed as `framing`; `limits` bound a chunked trailer section.
    public init(_ framing: BodyFraming, limits: HTTPHeadLimits = HTTPHeadLimits()) {
        self.limits = limits
        switch framing {
        case .none:
            phase = .done
        case .contentLength(let length):
            phase = length == 0 ? .done : .contentLength
            remaining = length
        case .chunked:
            phase = .size
        case .untilClose:
            phase = .untilClose
        }
    }

    /// Judges the next bytes of the stream (those after everything given before).
    public mutating func consume(_ bytes: UnsafeRawBufferPointer) -> BodyProgress {
        consume(bytes, payload: { _ in })
    }

    /// Like `consume`, and also reports, in order, which ranges of `bytes` are payload: all
    /// of the message's bytes for Content-Length and close framing, only chunk data (no sizes,
    /// extensions, CRLFs or trailers) for chunked. For de-chunking to an HTTP/1.0 client.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, payload: (Range<Int>) -> Void) -> BodyProgress {
        switch phase {
        case .done:
            return .done(0)
        case .failed:
            return .invalid(.badChunk)
        case .untilClose:
            bodyBytesSeen += UInt64(bytes.count)
            if !bytes.isEmpty { payload(0..<bytes.count) }
            return .body(bytes.count)
        case .contentLength:
            let take = min(remaining, UInt64(bytes.count))
            remaining -= take
            bodyBytesSeen += take
            if take > 0 { payload(0..<Int(take)) }
            if remaining == 0 {
                phase = .done
                return .done(Int(take))
            }
            return .body(Int(take))
        default:
            return consumeChunked(bytes, payload: payload)
        }
    }

    private mutating func consumeChunked(_ bytes: UnsafeRawBufferPointer, payload: (Range<Int>) -> Void) -> BodyProgress {
        let count = bytes.count
        var i = 0
        while i < count {
            if phase == .data {
                let take = Int(min(remaining, UInt64(count - i)))
                if take > 0 { payload(i..<(i + take)) }
                i += take
                remaining -= UInt64(take)
                if remaining == 0 { phase = .dataCR }
                continue
            }
            let b = bytes[i]
            i += 1
            if !step(b) {
                phase = .failed
                return .invalid(.badChunk)
            }
            if phase == .done {
                bodyBytesSeen += UInt64(i)
                return .done(i)
            }
        }
        bodyBytesSeen += UInt64(count)
        return .body(count)
    }

    /// Advances the chunked state machine by one byte (never in `.data`); false on a fault.
    private mutating func step(_ b: UInt8) -> Bool {
        switch phase {
        case .size, .extName, .extValueStart, .extToken, .extQuoted, .extQuotedPair, .extAfterQuoted, .bwsBeforeSemicolon,
             .sizeLF:
            lineBytes += 1
            if lineBytes > Self.maxChunkLineBytes { return false }
            return stepSizeLine(b)
        case .dataCR:
            guard b == HTTPBytes.cr else { return false }
            phase = .dataLF
        case .dataLF:
            guard b == HTTPBytes.lf else { return false }
            phase = .size
            remaining = 0
            digits = 0
            lineBytes = 0
        case .trailerLineStart, .trailerName, .trailerValue, .trailerLF, .finalLF:
            trailerBytes += 1
            if trailerBytes > limits.maxHeadBytes { return false }
            return stepTrailer(b)
        default:
            return false
        }
        return true
    }

    private mutating func stepSizeLine(_ b: UInt8) -> Bool {
        switch phase {
        case .size:
            if let nibble = HTTPBytes.hexValue(b) {
                // 16 hex digits is the most a UInt64 holds, so the shift never overflows.
                guard digits < 16 else { return false }
                digits += 1
                remaining = remaining << 4 | nibble
            } else if b == UInt8(ascii: ";"), digits > 0 {
                phase = .extName
                tokenLength = 0
            } else if HTTPBytes.isOWS(b), digits > 0 {
                phase = .bwsBeforeSemicolon
            } else if b == HTTPBytes.cr, digits > 0 {
                phase = .sizeLF
            } else {
                return false
            }
        case .extName:
            if HTTPBytes.isTokenChar(b) {
                tokenLength += 1
            } else if tokenLength == 0 {
                return false
            } else if b == UInt8(ascii: "=") {
                phase = .extValueStart
            } else {
                return endExtension(b)
            }
        case .extValueStart:
            if b == UInt8(ascii: "\"") {
                phase = .extQuoted
            } else if HTTPBytes.isTokenChar(b) {
                phase = .extToken
            } else {
                return false
            }
        case .extToken:
            if !HTTPBytes.isTokenChar(b) { return endExtension(b) }
        case .extQuoted:
            if b == UInt8(ascii: "\"") {
                phase = .extAfterQuoted
            } else if b == UInt8(ascii: "\\") {
                phase = .extQuotedPair
            } else if !HTTPBytes.isFieldValueByte(b) {
                return false
            }
        case .extQuotedPair:
            guard HTTPBytes.isFieldValueByte(b) else { return false }
            phase = .extQuoted
        case .extAfterQuoted:
            return endExtension(b)
        case .bwsBeforeSemicolon:
            // Whitespace here means an extension follows; anything but more of it or `;`
            // (a CR above all: `5 \r\n`) is refused, as parsers disagree on it.
            if b == UInt8(ascii: ";") {
                phase = .extName
                tokenLength = 0
            } else if !HTTPBytes.isOWS(b) {
                return false
            }
        case .sizeLF:
            guard b == HTTPBytes.lf else { return false }
            phase = remaining == 0 ? .trailerLineStart : .data
        default:
            return false
        }
        return true
    }

    /// After a complete extension: `;` starts another (whitespace may come before it), CR
    /// ends the size line.
    private mutating func endExtension(_ b: UInt8) -> Bool {
        if b == UInt8(ascii: ";") {
            phase = .extName
            tokenLength = 0
            return true
        }
        if HTTPBytes.isOWS(b) {
            phase = .bwsBeforeSemicolon
            return true
        }
        if b == HTTPBytes.cr {
            phase = .sizeLF
            return true
        }
        return false
    }

    private mutating func stepTrailer(_ b: UInt8) -> Bool {
        switch phase {
        case .trailerLineStart:
            if b == HTTPBytes.cr {
                phase = .finalLF
            } else if HTTPBytes.isTokenChar(b) {
                trailerLines += 1
                if trailerLines > limits.maxHeaders { return false }
                phase = .trailerName
            } else {
                return false
            }
        case .trailerName:
            if b == HTTPBytes.colon {
                phase = .trailerValue
            } else if !HTTPBytes.isTokenChar(b) {
                return false
            }
        case .trailerValue:
            if b == HTTPBytes.cr {
                phase = .trailerLF
            } else if !HTTPBytes.isFieldValueByte(b) {
                return false
            }
        case .trailerLF:
            guard b == HTTPBytes.lf else { return false }
            phase = .trailerLineStart
        case .finalLF:
            guard b == HTTPBytes.lf else { return false }
            phase = .done
        default:
            return false
        }
        return true
    }
}
