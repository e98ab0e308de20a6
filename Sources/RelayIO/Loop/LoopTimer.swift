import Synchronization

/// A pending one-shot timer; cancelled by `cancel()` or when the handle is dropped.
/// Cancel (and drop) it on its loop: cancelling releases the closure at once, so whatever
/// it captured does not live on until the deadline.
public final class LoopTimer: Sendable {
    final class State: @unchecked Sendable {
        let cancelled = Atomic<Bool>(false)
        /// Set once at init, cleared when fired or cancelled, only on the loop.
        var fire: (@Sendable () -> Void)?

        init(fire: @escaping @Sendable () -> Void) {
            self.fire = fire
        }
    }

    let state: State

    init(fire: @escaping @Sendable () -> Void) {
        state = State(fire: fire)
    }

    public func cancel() {
        state.cancelled.store(true, ordering: .relaxed)
        state.fire = nil
    }

    deinit {
        cancel()
    }
}
