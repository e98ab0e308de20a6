import Synchronization

/// A stream whose first bytes were already read from the one below: what a relay sent right
/// behind its `200` belongs to the tunnel, so the first reads return it before reading on.
final class PrefixedByteStream: ClientByteStream {
    let inner: any ClientByteStream
    private let prefix: Mutex<[UInt8]>

    init(inner: any ClientByteStream, prefix: [UInt8]) {
        self.inner = inner
        self.prefix = Mutex(prefix)
    }

    func read(maxBytes: Int) async throws(RelayClientError) -> [UInt8] {
        let taken = prefix.withLock { pending -> [UInt8] in
            let count = min(maxBytes, pending.count)
            let head = Array(pending[..<count])
            pending.removeFirst(count)
            return head
        }
        if !taken.isEmpty { return taken }
        return try await inner.read(maxBytes: maxBytes)
    }

    func write(_ bytes: [UInt8]) async throws(RelayClientError) {
        try await inner.write(bytes)
    }

    func shutdownWrite() async throws(RelayClientError) {
        try await inner.shutdownWrite()
    }

    func close() {
        inner.close()
    }
}
