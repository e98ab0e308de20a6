import RelayCore
import RelayIO
import Synchronization

/// One connection's NTLM or Negotiate handshake with the helper process reserved for it.
/// Send the client's tokens in order, one at a time; `finish()` when the handshake ends or
/// the connection goes away (dropping the last reference finishes it too).
///
/// Call from any thread: the process and the handshake's progress belong to the pool's
/// loop, where completions run, and are reached there through their `LoopBound`s.
public final class HelperConversation: Sendable {
    /// Where the handshake stands, on the pool's loop.
    private struct Progress {
        /// The child that took the first token; a later token for any other child is
        /// refused, since a fresh helper knows nothing of the handshake.
        var generation: Int?
        var waiting = false
    }

    private let pool: StatefulHelperPool
    private let process: LoopBound<HelperProcess>
    /// The process's place in the pool, given back by `finish()`.
    private let index: Int
    private let progress: LoopBoundBox<Progress>
    /// Set once by `finish()`: the process already belongs to the pool again.
    private let released = Atomic<Bool>(false)

    init(pool: StatefulHelperPool, process: LoopBound<HelperProcess>, index: Int) {
        self.pool = pool
        self.process = process
        self.index = index
        progress = LoopBoundBox(sending: Progress(), on: pool.loop)
    }

    /// Sends the client's `token`: `first` starts a handshake (`YR`, which also resets any
    /// state a previous conversation left in the helper), otherwise it continues this one
    /// (`KK`). `completion` runs once, on the pool's loop.
    public func send(token: [UInt8], first: Bool, completion: @escaping @Sendable (HelperTokenAnswer) -> Void) {
        let configuration = pool.configuration
        let line: [UInt8]
        switch HelperRequestLine.token(token, first: first, maxLineLength: configuration.maxLineLength) {
        case .success(let built): line = built
        case .failure(let error): return pool.loop.execute { completion(.failed(reason: "token \(error)")) }
        }
        pool.loop.execute { [self] in
            let process = process.value
            if released.load(ordering: .relaxed) { return completion(.broken(reason: "conversation finished")) }
            if progress.value.waiting { return completion(.broken(reason: "a token is already with the helper")) }
            if first {
                progress.value.generation = nil
            } else if progress.value.generation == nil || progress.value.generation != process.generation || !process.isRunning {
                return completion(.broken(reason: "helper restarted mid-handshake"))
            }
            progress.value.waiting = true
            process.submit(line, timeout: configuration.requestTimeout) { [self] outcome in
                progress.value.waiting = false
                // Reached a helper: the handshake now lives in this child.
                if case .reply = outcome, first { progress.value.generation = process.generation }
                completion(HelperTokenAnswer(outcome, scheme: pool.scheme, maxTokenLength: configuration.maxLineLength))
            }
        }
    }

    /// Gives the process back to the pool at once, so the next `begin()` can have it. With a
    /// token still at the helper the child is restarted, since its answer would otherwise
    /// reach the next conversation; that runs on the loop before any later conversation's
    /// first token can, because loop tasks run in order.
    public func finish() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pool.loop.execute { [self] in
            if progress.value.waiting { process.value.abandonInFlight(reason: "handshake abandoned") }
        }
        pool.release(index)
    }

    deinit {
        // A token at the helper holds this object (through its completion), so nothing is in
        // flight here.
        if !released.load(ordering: .acquiring) { pool.release(index) }
    }
}
