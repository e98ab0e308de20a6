import Dispatch
import Synchronization

/// One serial queue that owns a set of connections for their whole life: every socket,
/// buffer and timer of a connection is touched only here, so none of them needs a lock.
public final class EventLoop: Sendable {
    public let queue: DispatchQueue
    public let index: Int

    init(index: Int) {
        self.index = index
        self.queue = DispatchQueue(label: "dynrelay.loop.\(index)", qos: .userInitiated)
    }

    /// Runs `work` on this loop, later.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Crashes in debug builds when called off this loop: loop-confined state is not locked.
    @inlinable
    public func preconditionInLoop() {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
    }

    /// A one-shot timer on this loop. The returned handle owns it: cancel it, or drop it to cancel.
    public func scheduleTimer(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> LoopTimer {
        LoopTimer(queue: queue, after: delay, fire: fire)
    }
}

/// A pending one-shot timer; cancelled by `cancel()` or when the last reference goes away.
/// The source is immutable after init and DispatchSource cancel is thread-safe.
public final class LoopTimer: @unchecked Sendable {
    private let source: DispatchSourceTimer

    init(queue: DispatchQueue, after delay: Duration, fire: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        let nanos = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + .nanoseconds(nanos), leeway: .milliseconds(5))
        source.setEventHandler(handler: fire)
        source.resume()
    }

    public func cancel() {
        source.cancel()
    }

    deinit {
        source.cancel()
    }
}

/// The loops of the process; connections are spread over them round robin.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let cursor = Atomic<UInt>(0)

    public init(count: Int) {
        precondition(count > 0, "an event loop group needs at least one loop")
        loops = (0..<count).map { EventLoop(index: $0) }
    }

    /// The next loop in round-robin order.
    public func next() -> EventLoop {
        let value = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(value % UInt(loops.count))]
    }
}
