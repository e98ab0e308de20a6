import RelayCore

/// Reads responses off one connection: the head with RelayCore's strict parser, then the
/// body through `BodyFramer`, which finds its end and strips chunk framing without
/// buffering more than one read.
struct HTTPResponseReader {
    /// Bytes asked of the stream per read: what bounds the memory a response holds.
    static let readSize = 256 * 1024

    let connection: HTTPClientConnection
    private var buffer: [UInt8] = []
    /// Whether any byte of a response arrived (a request answered by nothing may be resent).
    private(set) var responseStarted = false

    init(connection: HTTPClientConnection) {
        self.connection = connection
    }

    /// Whether bytes beyond the last message are already here: a server that sent more
    /// than it framed, whose connection must not carry another request.
    var hasStrayBytes: Bool { !buffer.isEmpty }

    /// The next final response head (1xx interim responses are skipped).
    mutating func readHead(limits: HTTPHeadLimits = HTTPHeadLimits()) async throws(RelayHTTPError) -> HTTPResponseHead {
        var parser = HTTPResponseHeadParser(limits: limits)
        while true {
            if !buffer.isEmpty {
                switch buffer.withUnsafeBytes({ parser.parse($0) }) {
                case .complete(let head, let headLength):
                    buffer.removeFirst(headLength)
                    if (100...199).contains(head.status), head.status != 101 {
                        parser.reset()
                        continue
                    }
                    return head
                case .invalid(let code):
                    throw RelayHTTPError(.badResponse, "the response head does not parse (\(code))")
                case .needMore:
                    break
                }
            }
            let bytes = try await readMore(doing: "reading the response head")
            guard !bytes.isEmpty else {
                throw RelayHTTPError(.transport, "the connection closed before a complete response head",
                                     transport: RelayClientError(.connectionReset, "closed before a response"))
            }
            responseStarted = true
            buffer += bytes
        }
    }

    /// The next payload bytes of a body framed by `framer`; nil once it is complete. An end
    /// of stream before the framing says so is `truncated-body`, except for a close-delimited body.
    mutating func readPayload(_ framer: inout BodyFramer, endsAtClose: Bool) async throws(RelayHTTPError) -> [UInt8]? {
        while true {
            if framer.isComplete { return nil }
            if !buffer.isEmpty {
                var payload: [UInt8] = []
                // A read that is all payload (most of a Content-Length or close-delimited
                // body) is handed on as it is, without copying it.
                var wholeBuffer = false
                let progress = buffer.withUnsafeBytes { bytes in
                    framer.consume(bytes) { range in
                        if range.count == bytes.count {
                            wholeBuffer = true
                        } else {
                            payload += bytes[range]
                        }
                    }
                }
                let consumed: Int
                switch progress {
                case .body(let count), .done(let count):
                    consumed = count
                case .invalid(let code):
                    throw RelayHTTPError(code == .badChunk ? .badChunk : .badResponse, "the response body is malformed (\(code))")
                }
                if wholeBuffer {
                    payload = buffer
                    buffer = []
                } else {
                    buffer.removeFirst(consumed)
                }
                if !payload.isEmpty { return payload }
                continue
            }
            let bytes: [UInt8]
            do throws(RelayHTTPError) {
                bytes = try await readMore(doing: "reading the response body")
            } catch {
                throw RelayHTTPError(.truncatedBody, "the connection failed before the body ended: \(error.message)",
                                     transport: error.transport)
            }
            if bytes.isEmpty {
                if endsAtClose { return nil }
                throw RelayHTTPError(.truncatedBody, "the connection closed before the body ended")
            }
            buffer = bytes
        }
    }

    private mutating func readMore(doing: String) async throws(RelayHTTPError) -> [UInt8] {
        if let watch = connection.takeWatch() {
            do {
                return try await watch.value
            } catch let error as RelayClientError {
                throw .transport(error, doing)
            } catch {
                throw .transport(RelayClientError(.connectionFailed, "\(error)"), doing)
            }
        }
        do throws(RelayClientError) {
            return try await connection.stream.read(maxBytes: Self.readSize)
        } catch {
            throw .transport(error, doing)
        }
    }
}
