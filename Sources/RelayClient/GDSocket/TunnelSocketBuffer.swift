import Synchronization

/// A `TunnelSocket`'s inbound (`readStream`) or outbound (`writeStream`) buffer, with the
/// names of GDSocket's byte buffers. Safe from any thread.
public final class TunnelSocketBuffer: Sendable {
    private struct Content {
        var bytes: [UInt8] = []
        /// The socket's reader, waiting for the app to drain below `limit`.
        var waiter: CheckedContinuation<Void, Never>?
        var limit = 0
        /// The socket closed: no wait starts any more.
        var released = false
    }

    private let content = Mutex(Content())

    init() {}

    /// Appends `data`.
    public func write(_ data: [UInt8]) {
        content.withLock { $0.bytes += data }
    }

    /// Appends `text` in UTF-8.
    public func write(_ text: String) {
        write(Array(text.utf8))
    }

    /// How many bytes are waiting.
    public var unreadDataSize: Int { content.withLock { $0.bytes.count } }

    /// Up to `maxBytes` of the waiting bytes, removed from the buffer.
    public func read(maxBytes: Int) -> [UInt8] {
        take { pending in
            let count = min(maxBytes, pending.count)
            let head = Array(pending[..<count])
            pending.removeFirst(count)
            return head
        }
    }

    /// Every waiting byte, removed from the buffer.
    public func unreadData() -> [UInt8] {
        take { pending in
            defer { pending = [] }
            return pending
        }
    }

    /// Every waiting byte as UTF-8 text (invalid sequences replaced), removed from the buffer.
    public func unreadDataAsString() -> String {
        String(decoding: unreadData(), as: UTF8.self)
    }

    private func take(_ body: (inout [UInt8]) -> [UInt8]) -> [UInt8] {
        let (taken, waiter) = content.withLock { content -> ([UInt8], CheckedContinuation<Void, Never>?) in
            let taken = body(&content.bytes)
            guard content.bytes.count < content.limit, let waiter = content.waiter else { return (taken, nil) }
            content.waiter = nil
            return (taken, waiter)
        }
        waiter?.resume()
        return taken
    }

    /// Returns once fewer than `limit` bytes wait (at once if they do already), or at
    /// `release()`: the socket stops reading from the tunnel while the app is behind, so
    /// a server faster than the app fills the network's buffers, not this process's memory.
    func waitUntilBelow(_ limit: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = content.withLock { content -> Bool in
                guard content.bytes.count >= limit, !content.released else { return true }
                content.limit = limit
                content.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Ends a `waitUntilBelow` (the socket is closing).
    func release() {
        content.withLock { content in
            content.released = true
            defer { content.waiter = nil }
            return content.waiter
        }?.resume()
    }
}
