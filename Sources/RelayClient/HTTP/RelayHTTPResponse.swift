import RelayCore

/// A response: its status line and fields, the URL that answered (after redirects), and
/// the body as an async sequence of byte chunks, read from the connection as they are asked for.
public struct RelayHTTPResponse: Sendable {
    /// The status code.
    public let status: Int
    /// The reason phrase, possibly empty.
    public let reason: String
    /// The header fields as received.
    public let headers: HTTPHeaders
    /// The URL the response came from: the request's, or the last redirect's.
    public let url: ClientURL
    /// The body. Read it to the end (or call `body.discard()`) so the connection can serve
    /// another request; a body dropped half-read closes its connection.
    public let body: RelayHTTPResponseBody
}

/// A response body as chunks of bytes: the payload only (chunk framing removed), never
/// more than one read of the connection at a time. It can be iterated once.
public struct RelayHTTPResponseBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let source: HTTPResponseBodySource

    /// Iterates the chunks; failures are `RelayHTTPError`.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let source: HTTPResponseBodySource

        /// The next chunk, or nil at the end of the body.
        public mutating func next() async throws -> [UInt8]? {
            try await source.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: source)
    }

    /// The whole body, refused with `invalid-request` once it passes `limit` bytes.
    public func collect(upTo limit: Int) async throws(RelayHTTPError) -> [UInt8] {
        var all: [UInt8] = []
        while let chunk = try await source.next() {
            all += chunk
            guard all.count <= limit else {
                await source.cancel()
                throw RelayHTTPError(.invalidRequest, "the response body is larger than \(limit) bytes")
            }
        }
        return all
    }

    /// Reads the body to its end without keeping it.
    public func discard() async throws(RelayHTTPError) {
        while try await source.next() != nil {}
    }

    /// Stops reading: the connection is closed rather than reused.
    public func cancel() async {
        await source.cancel()
    }
}

/// The reading side of one response body, handing its connection back to the pool when
/// the body ended cleanly and nothing more arrived behind it.
actor HTTPResponseBodySource {
    private var reader: HTTPResponseReader?
    private var framer: BodyFramer
    private let endsAtClose: Bool
    private let keepAlive: Bool
    private let release: @Sendable (HTTPClientConnection) -> Void
    private var failure: RelayHTTPError?

    init(reader: HTTPResponseReader, framing: BodyFraming, keepAlive: Bool,
         release: @escaping @Sendable (HTTPClientConnection) -> Void) {
        self.reader = reader
        framer = BodyFramer(framing)
        endsAtClose = framing == .untilClose
        self.keepAlive = keepAlive && framing != .untilClose
        self.release = release
        if framer.isComplete {
            self.reader = nil
            if self.keepAlive, !reader.hasStrayBytes { release(reader.connection) } else { reader.connection.close() }
        }
    }

    deinit {
        reader?.connection.close()
    }

    func next() async throws(RelayHTTPError) -> [UInt8]? {
        if let failure { throw failure }
        guard var current = reader else { return nil }
        reader = nil
        var currentFramer = framer
        do throws(RelayHTTPError) {
            let chunk = try await current.readPayload(&currentFramer, endsAtClose: endsAtClose)
            framer = currentFramer
            reader = current
            if chunk == nil || framer.isComplete { finish() }
            return chunk
        } catch {
            current.connection.close()
            failure = error
            throw error
        }
    }

    func cancel() {
        reader?.connection.close()
        reader = nil
        failure = failure ?? RelayHTTPError(.aborted, "the body was cancelled")
    }

    private func finish() {
        guard let current = reader else { return }
        reader = nil
        if keepAlive, framer.isComplete, !current.hasStrayBytes {
            release(current.connection)
        } else {
            current.connection.close()
        }
    }
}
