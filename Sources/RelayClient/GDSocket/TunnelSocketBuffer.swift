import Synchronization

/// A `TunnelSocket`'s inbound (`readStream`) or outbound (`writeStream`) buffer, with the
/// names of GDSocket's byte buffers. Safe from any thread.
public final class TunnelSocketBuffer: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    init() {}

    /// Appends `data`.
    public func write(_ data: [UInt8]) {
        bytes.withLock { $0 += data }
    }

    /// Appends `text` in UTF-8.
    public func write(_ text: String) {
        write(Array(text.utf8))
    }

    /// How many bytes are waiting.
    public var unreadDataSize: Int { bytes.withLock { $0.count } }

    /// Up to `maxBytes` of the waiting bytes, removed from the buffer.
    public func read(maxBytes: Int) -> [UInt8] {
        bytes.withLock { pending in
            let count = min(maxBytes, pending.count)
            let head = Array(pending[..<count])
            pending.removeFirst(count)
            return head
        }
    }

    /// Every waiting byte, removed from the buffer.
    public func unreadData() -> [UInt8] {
        bytes.withLock { pending in
            defer { pending = [] }
            return pending
        }
    }

    /// Every waiting byte as UTF-8 text (invalid sequences replaced), removed from the buffer.
    public func unreadDataAsString() -> String {
        String(decoding: unreadData(), as: UTF8.self)
    }
}
