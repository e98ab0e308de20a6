import RelayCore
import RelayIO
import Synchronization

/// One connection's NTLM or Negotiate handshake with the helper process reserved for it.
/// Send the client's tokens in order, one at a time; `finish()` when the handshake ends or
/// the connection goes away (dropping the last reference finishes it too).
///
/// Call from any thread. Loop-confined state: apart from `released`, the fields below are
/// touched only on the pool's loop, where completions run.
public final class HelperConversation: @unchecked Sendable {
    private let pool: StatefulHelperPool
    private let process: HelperProcess
    /// The child that took the first token; a later token for any other child is refused,
    /// since a fresh helper knows nothing of the handshake.
    private var generation: Int?
    private var waiting = false
    /// Set once by `finish()`: the process already belongs to the pool again.
    private let released = Atomic<Bool>(false)

    init(pool: StatefulHelperPool, process: HelperProcess) {
        self.pool = pool
        self.process = process
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
            if released.load(ordering: .relaxed) { return completion(.broken(reason: "conversation finished")) }
            if waiting { return completion(.broken(reason: "a token is already with the helper")) }
            if first {
                generation = nil
            } else if generation == nil || generation != process.generation || !process.isRunning {
                return completion(.broken(reason: "helper restarted mid-handshake"))
            }
            waiting = true
            process.submit(line, timeout: configuration.requestTimeout) { [self] outcome in
                waiting = false
                // Reached a helper: the handshake now lives in this child.
                if case .reply = outcome, first { generation = process.generation }
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
            if waiting { process.abandonInFlight(reason: "handshake abandoned") }
        }
        pool.release(process)
    }

    deinit {
        // A token at the helper holds this object (through its completion), so nothing is in
        // flight here.
        if !released.load(ordering: .acquiring) { pool.release(process) }
    }
}
