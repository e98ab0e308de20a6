import Dispatch
import Synchronization

/// Runs blocking or slow work (getaddrinfo, password KDFs, GSS-API) off the event loops:
/// at most `threads` jobs run at once, up to `maxWaiting` wait their turn, and the rest
/// are refused at once, so a flood can neither grow memory nor stall the loops.
public final class WorkerPool: Sendable {
    private struct State {
        var running = 0
        /// Jobs admitted and not yet started, oldest first (at most `maxWaiting`).
        var waiting: [@Sendable () -> Void] = []
    }

    private let threads: Int
    private let maxWaiting: Int
    private let queue: DispatchQueue
    private let state = Mutex(State())

    public init(label: String, threads: Int, maxWaiting: Int) {
        self.threads = threads
        self.maxWaiting = maxWaiting
        self.queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Queues `job`; false (and nothing queued) when the pool is saturated.
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let admitted: Bool? = state.withLock { state in
            if state.running < threads {
                state.running += 1
                return true
            }
            if state.waiting.count < maxWaiting {
                state.waiting.append(job)
                return false
            }
            return nil
        }
        switch admitted {
        case true?: queue.async { self.run(job) }
        case false?: break
        case nil: return false
        }
        return true
    }

    /// Runs `job` only if a thread is free and nothing waits; false (nothing queued)
    /// otherwise. For work that may be skipped, so it never delays a job someone waits for.
    public func submitIfIdle(_ job: @escaping @Sendable () -> Void) -> Bool {
        let admitted = state.withLock { state in
            guard state.running < threads, state.waiting.isEmpty else { return false }
            state.running += 1
            return true
        }
        if admitted { queue.async { self.run(job) } }
        return admitted
    }

    private func run(_ first: @escaping @Sendable () -> Void) {
        var job = first
        while true {
            job()
            let next: (@Sendable () -> Void)? = state.withLock { state in
                guard !state.waiting.isEmpty else {
                    state.running -= 1
                    return nil
                }
                // Removed, not skipped over: a queue that never empties must not keep every
                // finished job (and what it captured) alive.
                return state.waiting.removeFirst()
            }
            guard let next else { return }
            job = next
        }
    }
}
