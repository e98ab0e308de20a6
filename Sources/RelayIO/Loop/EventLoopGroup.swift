import Synchronization

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
