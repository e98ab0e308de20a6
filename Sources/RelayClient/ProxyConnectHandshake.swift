import RelayCore

/// The client side of `CONNECT`, as a state machine with no I/O:
/// `initialized → connectSent → completed | failed`.
///
/// Feed it whatever the proxy sends; it answers with the tunnel's first payload bytes (if the
/// server spoke first in the same read) or a typed failure whose `reason` is the proxy's
/// reason code (dynrelay puts it in every refusal body).
public struct ProxyConnectHandshake {
    /// Why a tunnel was not established.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// HTTP status from the proxy, or 0 when it did not answer with one.
        public var status: Int
        /// The proxy's reason code (its refusal body), or a local one (`closed-early`, `bad-response`).
        public var reason: String
        /// `Proxy-Authenticate` challenges of a `407`, strongest first as the proxy sent them.
        public var challenges: [String]
        /// The proxy left the connection open for another request (an HTTP/1.1 refusal whose
        /// body was read in full, no `Connection: close`): a `407`'s answer, NTLM's above all,
        /// goes on this connection.
        public var keepsConnection: Bool = false

        public var description: String { "proxy refused: \(status) \(reason)" }
    }

    /// What one call to `receive` produced.
    public enum Progress: Equatable, Sendable {
        case needMore
        /// The tunnel is up; these bytes already belong to the tunnelled stream.
        case established(leftover: [UInt8])
        case failed(Failure)
    }

    private enum State {
        case initialized
        case connectSent
        case awaitingRefusalBody(HTTPResponseHead, bodyLength: Int)
        case completed
        case failed
    }

    private static let maxRefusalBody = 4096
    private let authority: String
    private let extraHeaders: [(name: String, value: String)]
    private var state = State.initialized
    private var parser = HTTPResponseHeadParser(limits: HTTPHeadLimits())
    private var buffer: [UInt8] = []
    /// The `Proxy-Authenticate` values of the 2xx that opened the tunnel: Negotiate's final
    /// token (mutual authentication) when the proxy sent one. Empty until `established`.
    public private(set) var establishedChallenges: [String] = []

    /// `host` is a name or IP literal (IPv6 without brackets); `extraHeaders` e.g. Proxy-Authorization.
    public init(host: String, port: UInt16, extraHeaders: [(name: String, value: String)] = []) {
        self.authority = Self.authority(host: host, port: port)
        self.extraHeaders = extraHeaders
    }

    /// The request target of a `CONNECT` to `host` (IPv6 without brackets) and `port`: what
    /// a Digest answer to the proxy must name as its `uri`.
    public static func authority(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The request to send; call once.
    public mutating func start() -> [UInt8] {
        guard case .initialized = state else { preconditionFailure("CONNECT already sent") }
        state = .connectSent
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        for header in extraHeaders {
            request += "\(header.name): \(header.value)\r\n"
        }
        request += "\r\n"
        return Array(request.utf8)
    }

    /// Bytes from the proxy.
    public mutating func receive(_ bytes: [UInt8]) -> Progress {
        buffer += bytes
        switch state {
        case .connectSent:
            let result = buffer.withUnsafeBytes { parser.parse($0) }
            switch result {
            case .needMore:
                return .needMore
            case .invalid:
                return fail(status: 0, reason: "bad-response")
            case .complete(let head, let headLength):
                buffer.removeFirst(headLength)
                if (200..<300).contains(head.status) {
                    state = .completed
                    establishedChallenges = head.headers.values("proxy-authenticate")
                    let leftover = buffer
                    buffer = []
                    return .established(leftover: leftover)
                }
                // A negative length is as unusable as a missing one: read no body.
                let length = max(0, head.headers.first("content-length").flatMap { Int($0) } ?? 0)
                state = .awaitingRefusalBody(head, bodyLength: min(length, Self.maxRefusalBody))
                return receive([])
            }
        case .awaitingRefusalBody(let head, let bodyLength):
            guard buffer.count >= bodyLength else { return .needMore }
            let body = trimmed(String(decoding: buffer.prefix(bodyLength), as: UTF8.self))
            let declared = head.headers.first("content-length").flatMap { Int($0) }
            let keeps = head.version == .http1_1 && declared == bodyLength && buffer.count == bodyLength
                && !head.headers.tokens("connection").contains("close")
            return fail(status: head.status, reason: body.isEmpty ? head.reason : body,
                        challenges: head.headers.values("proxy-authenticate"), keepsConnection: keeps)
        case .initialized, .completed, .failed:
            preconditionFailure("receive called outside the handshake")
        }
    }

    /// The proxy closed before the handshake finished.
    public mutating func receiveEOF() -> Failure {
        if case .awaitingRefusalBody(let head, _) = state {
            let body = trimmed(String(decoding: buffer, as: UTF8.self))
            state = .failed
            return Failure(status: head.status, reason: body.isEmpty ? head.reason : body,
                           challenges: head.headers.values("proxy-authenticate"))
        }
        state = .failed
        return Failure(status: 0, reason: "closed-early", challenges: [])
    }

    private mutating func fail(status: Int, reason: String, challenges: [String] = [], keepsConnection: Bool = false) -> Progress {
        state = .failed
        return .failed(Failure(status: status, reason: reason, challenges: challenges, keepsConnection: keepsConnection))
    }
}

private func trimmed(_ text: String) -> String {
    var scalars = Substring(text)
    while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
    while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
    return String(scalars)
}
