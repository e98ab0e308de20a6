import Synchronization

/// An async lock held across suspension points, fair (first come, first served): what the
/// TLS layer takes while it moves records to the stream below, so records written by the
/// reading task (a key update's answer) and by the writing task go out in OpenSSL's order.
final class AsyncSerialGate: Sendable {
    private struct State {
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Waits for the gate and takes it.
    func enter() async {
        let taken = state.withLock { state in
            guard !state.held else { return false }
            state.held = true
            return true
        }
        if taken { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Takes the gate if it is open; false (and nothing taken) when someone holds it.
    func tryEnter() -> Bool {
        state.withLock { state in
            guard !state.held else { return false }
            state.held = true
            return true
        }
    }

    /// Hands the gate to the next waiter, or opens it.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
