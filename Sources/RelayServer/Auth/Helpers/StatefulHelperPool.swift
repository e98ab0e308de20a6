import RelayCore
import RelayIO
import Synchronization

/// NTLM and Negotiate helpers: a handshake spans several requests that must reach the same
/// helper process, so each conversation reserves one process (no channel ids) until it
/// finishes. Processes start on demand, up to `configuration.processes`.
///
/// Call from any thread. The reservation table sits behind a `Mutex` (begin() answers at
/// once); the processes themselves are confined to `loop`, where completions run. Entries
/// are only ever appended, so an entry's index names its process for the pool's life.
public final class StatefulHelperPool: Sendable {
    struct Entry {
        let process: LoopBound<HelperProcess>
        var reserved: Bool
        /// Mirrors `process.isFailing` (read on the loop) for `begin()` on other threads.
        var failing: Bool
    }

    private struct State {
        var entries: [Entry] = []
        var isClosed = false
    }

    /// `.ntlm` or `.negotiate`: how the helper's older `AF` answer reads.
    public let scheme: AuthConfig.Scheme
    public let command: ChildCommand
    public let configuration: HelperPoolConfiguration
    let loop: EventLoop
    private let log: RelayLog
    private let state = Mutex(State())

    /// Starts no process yet: the first `begin()` does. `configuration.concurrency` is
    /// ignored (stateful helpers take one request at a time).
    public init(scheme: AuthConfig.Scheme, command: ChildCommand, configuration: HelperPoolConfiguration,
                loop: EventLoop, log: RelayLog) {
        precondition(scheme == .ntlm || scheme == .negotiate, "only NTLM and Negotiate helpers are stateful")
        self.scheme = scheme
        self.command = command
        self.configuration = configuration
        self.loop = loop
        self.log = log
    }

    /// Reserves a helper process for one connection's handshake: an idle working one, else a
    /// new one while fewer than `configuration.processes` run, else an idle one that is
    /// failing to start (its requests fail at once, which the caller reports as a broken
    /// helper). Nil when every process is taken: answer the client 503.
    public func begin() -> HelperConversation? {
        let chosen: (index: Int, process: LoopBound<HelperProcess>, isNew: Bool)? = state.withLock { state in
            if state.isClosed { return nil }
            if let index = state.entries.firstIndex(where: { !$0.reserved && !$0.failing }) {
                state.entries[index].reserved = true
                return (index, state.entries[index].process, false)
            }
            if state.entries.count < configuration.processes {
                let process = LoopBound(sending: HelperProcess(
                    command: command, concurrency: 0, maxLineLength: configuration.maxLineLength,
                    minimumRestartInterval: configuration.minimumRestartInterval, loop: loop, log: log), on: loop)
                state.entries.append(Entry(process: process, reserved: true, failing: false))
                return (state.entries.count - 1, process, true)
            }
            if let index = state.entries.firstIndex(where: { !$0.reserved }) {
                state.entries[index].reserved = true
                return (index, state.entries[index].process, false)
            }
            return nil
        }
        guard let chosen else { return nil }
        if chosen.isNew {
            let (index, bound) = (chosen.index, chosen.process)
            loop.execute { [self] in
                let process = bound.value
                process.onChange = { [weak self, unowned process] in
                    self?.setFailing(index, process.isFailing)
                }
                if state.withLock({ $0.isClosed }) { process.close() } else { process.start() }
            }
        }
        return HelperConversation(pool: self, process: chosen.process, index: chosen.index)
    }

    /// Kills every helper process; conversations in progress are answered broken.
    public func close() {
        let processes = state.withLock { state in
            state.isClosed = true
            return state.entries.map(\.process)
        }
        loop.execute { processes.forEach { $0.value.close() } }
    }

    deinit {
        // Dropped without close(): the children must not outlive their pool.
        let processes = state.withLock { $0.entries.map(\.process) }
        loop.execute { processes.forEach { $0.value.close() } }
    }

    /// The running children's pids (tests kill them).
    func pids() -> [Int32] {
        let processes = state.withLock { $0.entries.map(\.process) }
        return loop.sync { processes.compactMap(\.value.pid) }
    }

    /// A conversation is over and the process at `index` may serve another.
    func release(_ index: Int) {
        state.withLock { $0.entries[index].reserved = false }
    }

    private func setFailing(_ index: Int, _ failing: Bool) {
        state.withLock { $0.entries[index].failing = failing }
    }
}
