/// Decides a message's body framing from its head, refusing every combination two HTTP
/// implementations could read differently (the root of request smuggling).
///
/// Errors are returned as `Result<BodyFraming, ReasonCode>`; `ReasonCode` conforms to
/// `Error` for this (see `ReasonCode+Error.swift`).
public enum MessageFraming {
    /// Request body framing. Refused: Content-Length together with Transfer-Encoding
    /// (`.ambiguousFraming`), Transfer-Encoding on HTTP/1.0 (`.ambiguousFraming`, RFC 9112
    /// 6.1 calls that framing faulty), a Transfer-Encoding whose final coding is not exactly
    /// one `chunked` (`.badTransferEncoding`, 400: RFC 9112 6.3 says its length cannot be
    /// determined), `chunked` preceded by other codings (`.unsupportedTransferEncoding`, 501:
    /// the framing is clear, but the relay would pass on codings it cannot check to an origin
    /// whose reading of a coding list it cannot know, the disagreement smuggling feeds on),
    /// more than one Content-Length field or a list value (`.duplicateContentLength`), a
    /// Content-Length that is not 1*DIGIT fitting in UInt64 (`.badContentLength`). No framing
    /// headers means no body.
    public static func request(_ head: HTTPRequestHead) -> Result<BodyFraming, ReasonCode> {
        let hasTE = head.headers.contains("Transfer-Encoding")
        if hasTE {
            if head.headers.contains("Content-Length") || head.version == .http1_0 {
                return .failure(.ambiguousFraming)
            }
            let codings = transferCodings(head.headers)
            let earlier = codings.dropLast()
            guard let last = codings.last, isChunked(last),
                  earlier.allSatisfy({ isCodingName($0) && !isChunked($0) }) else {
                return .failure(.badTransferEncoding)
            }
            guard earlier.isEmpty else { return .failure(.unsupportedTransferEncoding) }
            return .success(.chunked)
        }
        switch contentLength(head.headers) {
        case .success(let length?): return .success(.contentLength(length))
        case .success(nil): return .success(.none)
        case .failure(let code): return .failure(code)
        }
    }

    /// Response body framing for a response to `requestMethod`: none for HEAD, 1xx, 204 and
    /// 304 whatever the headers say (RFC 9112 6.3 rules 1); then Transfer-Encoding whose
    /// final coding is `chunked` (a server may send `gzip, chunked`; the body is relayed
    /// verbatim so the inner coding is not our concern); a Transfer-Encoding whose final
    /// coding is something else is read until the server closes (RFC 9112 6.3 rule 4); then
    /// Content-Length; else until close. Refused like requests: CL with TE or TE on HTTP/1.0
    /// (`.ambiguousFraming`), a final `chunked` after a malformed coding or a second
    /// `chunked` (`.unsupportedTransferEncoding`), bad or duplicate Content-Length.
    public static func response(_ head: HTTPResponseHead, requestMethod: String) -> Result<BodyFraming, ReasonCode> {
        if requestMethod == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304 {
            return .success(.none)
        }
        if head.headers.contains("Transfer-Encoding") {
            if head.headers.contains("Content-Length") || head.version == .http1_0 {
                return .failure(.ambiguousFraming)
            }
            let codings = transferCodings(head.headers)
            guard let last = codings.last, isChunked(last) else { return .success(.untilClose) }
            for coding in codings.dropLast() {
                guard !coding.isEmpty, coding.utf8.allSatisfy(HTTPBytes.isTokenChar), !isChunked(coding) else {
                    return .failure(.unsupportedTransferEncoding)
                }
            }
            return .success(.chunked)
        }
        switch contentLength(head.headers) {
        case .success(let length?): return .success(.contentLength(length))
        case .success(nil): return .success(.untilClose)
        case .failure(let code): return .failure(code)
        }
    }

    /// Whether a message sends `Transfer-Encoding: chunked` and no other coding: all an
    /// HTTP/1.0 recipient can be given (de-chunked), since it knows no transfer codings.
    public static func isChunkedOnly(_ headers: HTTPHeaders) -> Bool {
        let codings = transferCodings(headers)
        return codings.count == 1 && isChunked(codings[0])
    }

    /// Whether `coding` is a transfer-coding name, with or without parameters (which the
    /// relay never needs to read: a coding other than `chunked` is refused anyway).
    private static func isCodingName(_ coding: String) -> Bool {
        let name = trimOWS(String(coding.prefix { $0 != ";" }))
        return !name.isEmpty && name.utf8.allSatisfy(HTTPBytes.isTokenChar)
    }

    /// Every element of every Transfer-Encoding field, in order, trimmed of OWS; empty
    /// elements are kept (as empty strings) so a malformed list never reads as a clean one.
    private static func transferCodings(_ headers: HTTPHeaders) -> [String] {
        var codings: [String] = []
        for value in headers.values("Transfer-Encoding") {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                codings.append(trimOWS(String(element)))
            }
        }
        return codings
    }

    /// The single Content-Length value, nil when absent.
    static func contentLength(_ headers: HTTPHeaders) -> Result<UInt64?, ReasonCode> {
        let values = headers.values("Content-Length")
        guard let value = values.first else { return .success(nil) }
        // RFC 9110 8.6 lets a recipient collapse "5, 5"; we refuse instead, since whoever
        // sent it is either broken or probing for a parser that picks another element.
        if values.count > 1 || value.utf8.contains(UInt8(ascii: ",")) { return .failure(.duplicateContentLength) }
        guard let length = HTTPBytes.parseDecimal(value.utf8) else { return .failure(.badContentLength) }
        return .success(length)
    }

    /// Exactly the token `chunked`, any case, ignoring surrounding OWS.
    private static func isChunked(_ value: String) -> Bool {
        let trimmed = trimOWS(value)
        return trimmed.utf8.count == 7 && HTTPBytes.equalsIgnoringASCIICase(trimmed, "chunked")
    }

    private static func trimOWS(_ value: String) -> String {
        let bytes = Array(value.utf8)
        var a = 0, b = bytes.count
        while a < b && HTTPBytes.isOWS(bytes[a]) { a += 1 }
        while b > a && HTTPBytes.isOWS(bytes[b - 1]) { b -= 1 }
        if a == 0 && b == bytes.count { return value }
        return String(decoding: bytes[a..<b], as: UTF8.self)
    }
}
