import Foundation
import RelayCore

/// A relay's answer to a request addressed to the relay itself.
struct RelayAnswer {
    let head: HTTPResponseHead
    let body: [UInt8]
    /// The relay closes the connection after this answer, or it sent bytes past the answer:
    /// the connection is not used again.
    let closes: Bool

    /// The relay's reason code: dynrelay's refusal bodies are the code on one line.
    var reasonCode: String? {
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty || text.contains(" ") || text.contains("<") ? nil : text
    }
}

/// Reads one answer: the head, then a body framed by Content-Length or by the end of the
/// stream, never more than `limit` bytes. A chunked body is read to the end of the stream
/// undecoded: dynrelay never chunks these answers, so such a body is another proxy's.
struct RelayAnswerReader {
    private var parser = HTTPResponseHeadParser()
    private var buffer: [UInt8] = []
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    mutating func read(from stream: any ClientByteStream, relay: RelayEndpoint) async throws(RelayClientError) -> RelayAnswer {
        let (head, headLength) = try await readHead(from: stream, relay: relay)
        var body = Array(buffer[headLength...])
        let closes = head.headers.tokens("Connection").contains { $0.lowercased() == "close" } || head.version == .http1_0
        if let length = head.headers.first("Content-Length").flatMap(Int.init), length >= 0, length <= limit {
            while body.count < length {
                let more = try await stream.read(maxBytes: min(64 * 1024, length - body.count))
                guard !more.isEmpty else { throw Self.bad(relay, "the answer ended before its Content-Length") }
                body += more
            }
            // Bytes past the body answer nothing that was asked: the connection is not used
            // again rather than guessing where the next answer starts.
            return RelayAnswer(head: head, body: Array(body.prefix(length)), closes: closes || body.count > length)
        }
        // No length: the body runs to the end of the stream.
        while body.count <= limit {
            let more = try await stream.read(maxBytes: 64 * 1024)
            if more.isEmpty { break }
            body += more
        }
        return RelayAnswer(head: head, body: Array(body.prefix(limit)), closes: true)
    }

    private mutating func readHead(from stream: any ClientByteStream,
                                   relay: RelayEndpoint) async throws(RelayClientError) -> (HTTPResponseHead, Int) {
        while true {
            let result = buffer.withUnsafeBytes { parser.parse($0) }
            switch result {
            case .complete(let head, let headLength):
                guard head.status >= 200 else {
                    // An interim answer (100 Continue): the final one follows.
                    buffer.removeFirst(headLength)
                    parser.reset()
                    continue
                }
                return (head, headLength)
            case .invalid(let reason):
                throw Self.bad(relay, "not an HTTP answer (\(reason.rawValue))")
            case .needMore:
                guard buffer.count < limit else { throw Self.bad(relay, "an answer head over \(limit) bytes") }
                let more = try await stream.read(maxBytes: 64 * 1024)
                guard !more.isEmpty else { throw Self.bad(relay, "the connection closed before an answer") }
                buffer += more
            }
        }
    }

    private static func bad(_ relay: RelayEndpoint, _ what: String) -> RelayClientError {
        RelayClientError(.relayBadResponse, "\(relay.url.authority): \(what)")
    }
}
