import Synchronization

/// A pending one-shot timer of one loop (`EventLoop.scheduleTimer`); cancelled by `cancel()`
/// or when the handle is dropped. Loop-confined like what it fires into, so not `Sendable`:
/// `cancel()` is called on the loop, and releases the closure at once, so whatever it
/// captured does not live on until the deadline.
///
/// The handle may still be released on another thread, when it rides in a `LoopBound` or
/// in an object that thread frees last: then it only marks the timer cancelled (an atomic
/// flag the loop reads before firing) and hands the release of the closure to the loop.
public final class LoopTimer {
    /// What the handle and the loop's timer heap share.
    final class State: Sendable {
        /// Set by whichever comes first, a cancel or the firing; read by the loop before it fires.
        let cancelled = Atomic<Bool>(false)
        /// The closure, until the timer fires or is cancelled; only the loop touches it.
        let fire: LoopBoundBox<(() -> Void)?>

        init(fire: @escaping () -> Void, on loop: EventLoop) {
            self.fire = LoopBoundBox(fire, on: loop)
        }

        /// On the loop: the timer will not fire, and its closure is released now.
        func cancelOnLoop() {
            cancelled.store(true, ordering: .relaxed)
            fire.value = nil
        }
    }

    let state: State

    /// Call on `loop`.
    init(fire: @escaping () -> Void, on loop: EventLoop) {
        state = State(fire: fire, on: loop)
    }

    /// Stops the timer if it has not fired (harmless after). Call on its loop.
    public func cancel() {
        state.cancelOnLoop()
    }

    deinit {
        let loop = state.fire.loop
        if loop.inLoop {
            state.cancelOnLoop()
        } else {
            // After the store the loop fires it no more: it exchanges the flag before firing.
            state.cancelled.store(true, ordering: .relaxed)
            let state = self.state
            loop.execute { state.cancelOnLoop() }
        }
    }
}
