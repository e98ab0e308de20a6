/// Queued writes to one `RelayStream` with backpressure: callers check `pendingBytes`
/// against their high-water mark and stop reading the other side above it.
/// Loop-confined: touched only on the socket's loop.
public final class BufferedWriter {
    private let socket: any RelayStream
    private var chunks: [[UInt8]] = []
    private var firstChunk = 0
    private var offsetInFirst = 0
    private var failed = false
    /// Bytes accepted by `enqueue` and not yet taken by the kernel.
    public private(set) var pendingBytes = 0
    /// Monotonic nanoseconds since the socket last took a byte while bytes waited; nil when
    /// nothing waits. A peer that reads nothing for long is stalled (`stall-timeout`).
    public private(set) var stalledSince: UInt64?
    /// Runs (on the loop) when a non-empty queue becomes empty.
    public var onDrained: (() -> Void)?
    /// Runs (later, on the loop, once) when a write fails; everything queued is dropped.
    public var onError: ((IOError) -> Void)?

    /// Writes to `socket`, on its loop.
    public init(socket: any RelayStream) {
        self.socket = socket
    }

    /// Writes now what the socket takes and queues the rest.
    public func enqueue(_ bytes: [UInt8]) {
        socket.loop.assertInLoop()
        guard !failed, !bytes.isEmpty else { return }
        if pendingBytes == 0 {
            let written: Int
            switch bytes.withUnsafeBytes({ raw in Result { () throws(IOError) in try socket.write(raw) } }) {
            case .success(let count): written = count
            case .failure(let error): return fail(error)
            }
            if written == bytes.count { return }
            chunks.append(written == 0 ? bytes : Array(bytes[written...]))
            pendingBytes = bytes.count - written
            stalledSince = monotonicNanos()
            socket.whenWritable { [weak self] in self?.flush() }
        } else {
            chunks.append(bytes)
            pendingBytes += bytes.count
        }
    }

    /// Removes and returns every byte not yet written, in order (for a caller handing the
    /// socket to something else that must send them first).
    public func takeUnsent() -> [UInt8] {
        socket.loop.preconditionInLoop()
        var unsent: [UInt8] = []
        unsent.reserveCapacity(pendingBytes)
        for index in firstChunk..<chunks.count {
            let chunk = chunks[index]
            unsent += index == firstChunk ? chunk[offsetInFirst...] : chunk[...]
        }
        chunks.removeAll(keepingCapacity: false)
        firstChunk = 0
        offsetInFirst = 0
        pendingBytes = 0
        stalledSince = nil
        return unsent
    }

    private func flush() {
        while firstChunk < chunks.count {
            let chunk = chunks[firstChunk]
            let written: Int
            let offset = offsetInFirst
            switch chunk.withUnsafeBytes({ raw in
                Result { () throws(IOError) in try socket.write(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }) {
            case .success(let count): written = count
            case .failure(let error): return fail(error)
            }
            pendingBytes -= written
            offsetInFirst += written
            if written > 0 { stalledSince = monotonicNanos() }
            if offsetInFirst < chunk.count {
                socket.whenWritable { [weak self] in self?.flush() }
                return
            }
            // The kernel has this chunk: release it now, not when the queue next empties (a
            // queue that is topped up below its high-water mark may never empty).
            chunks[firstChunk] = []
            firstChunk += 1
            offsetInFirst = 0
            if firstChunk * 2 >= chunks.count {
                chunks.removeFirst(firstChunk)
                firstChunk = 0
            }
        }
        chunks.removeAll(keepingCapacity: false)
        firstChunk = 0
        stalledSince = nil
        onDrained?()
    }

    private func fail(_ error: IOError) {
        failed = true
        chunks = []
        firstChunk = 0
        offsetInFirst = 0
        pendingBytes = 0
        stalledSince = nil
        // Reported from a fresh loop turn: the caller may be in the middle of its own work.
        let writer = LoopBound(self, on: socket.loop)
        socket.loop.execute { writer.value.onError?(error) }
    }
}
