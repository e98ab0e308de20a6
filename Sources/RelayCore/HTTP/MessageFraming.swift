/// Decides a message's body framing from its head, refusing every combination two HTTP
/// implementations could read differently (the root of request smuggling).
///
/// Errors are returned as `Result<BodyFraming, ReasonCode>`; `ReasonCode` conforms to
/// `Error` for this (see `ReasonCode+Error.swift`).
public enum MessageFraming {
    /// Request body framing. Refused: Content-Length together with Transfer-Encoding
    /// (`.ambiguousFraming`), Transfer-Encoding on HTTP/1.0 (`.ambiguousFraming`, RFC 9112
    /// 6.1 calls that framing faulty), Transfer-Encoding other than exactly one `chunked`
    /// (`.unsupportedTransferEncoding`), more than one Content-Length field or a list value
    /// (`.duplicateContentLength`), a Content-Length that is not 1*DIGIT fitting in UInt64
    /// (`.badContentLength`). No framing headers means no body.
    public static func request(_ head: HTTPRequestHead) -> Result<BodyFraming, ReasonCode> {
        let hasTE = head.headers.contains("Transfer-Encoding")
        if hasTE {
            if head.headers.contains("Content-Length") || head.version == .http1_0 {
                return .failure(.ambiguousFraming)
            }
            let values = head.headers.values("Transfer-Encoding")
            guard values.count == 1, isChunked(values[0]) else { return .failure(.unsupportedTransferEncoding) }
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
    /// verbatim so the inner coding is not our concern); then Content-Length; else until
    /// close. Refused like requests: CL with TE or TE on HTTP/1.0 (`.ambiguousFraming`), a
    /// TE list not ending in exactly one `chunked` (`.unsupportedTransferEncoding`), bad or
    /// duplicate Content-Length.
    public static func response(_ head: HTTPResponseHead, requestMethod: String) -> Result<BodyFraming, ReasonCode> {
        if requestMethod == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304 {
            return .success(.none)
        }
        if head.headers.contains("Transfer-Encoding") {
            if head.headers.contains("Content-Length") || head.version == .http1_0 {
                return .failure(.ambiguousFraming)
            }
            var codings: [String] = []
            for value in head.headers.values("Transfer-Encoding") {
                for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                    codings.append(String(element))
                }
            }
            guard let last = codings.last, isChunked(last) else { return .failure(.unsupportedTransferEncoding) }
            for coding in codings.dropLast() {
                let trimmed = trimOWS(coding)
                guard !trimmed.isEmpty, trimmed.utf8.allSatisfy(HTTPBytes.isTokenChar), !isChunked(trimmed) else {
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
