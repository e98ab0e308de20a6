import Synchronization

/// Idle OpenSSL contexts of one kind, already keyed, for operations that run on every
/// request: building and keying a context costs more than the MAC or decryption it then
/// does (OpenSSL 3 fetches its algorithms under locks). A borrowed context is used by one
/// thread at a time.
final class OpenSSLContextPool: Sendable {
    /// Contexts kept idle; beyond this many in use at once they are built and freed.
    static let maxIdle = 8

    /// Bit patterns of the idle context pointers.
    private let idle = Mutex<[UInt]>([])
    private let make: @Sendable () -> OpaquePointer
    private let free: @Sendable (OpaquePointer) -> Void

    /// `make` builds a keyed context (or crashes: a fixed algorithm failing is a broken
    /// OpenSSL); `free` releases one.
    init(make: @escaping @Sendable () -> OpaquePointer, free: @escaping @Sendable (OpaquePointer) -> Void) {
        self.make = make
        self.free = free
    }

    deinit {
        for ctx in idle.withLock({ $0 }) { free(OpaquePointer(bitPattern: ctx)!) }
    }

    /// An idle context, or a new one.
    func borrow() -> OpaquePointer {
        if let ctx = idle.withLock({ $0.popLast() }) { return OpaquePointer(bitPattern: ctx)! }
        return make()
    }

    /// Returns a context whose last use succeeded; one that failed is `discard`ed instead, so
    /// no half-finished state is ever reused.
    func giveBack(_ ctx: OpaquePointer) {
        let kept = idle.withLock { idle in
            guard idle.count < Self.maxIdle else { return false }
            idle.append(UInt(bitPattern: ctx))
            return true
        }
        if !kept { free(ctx) }
    }

    func discard(_ ctx: OpaquePointer) {
        free(ctx)
    }
}
