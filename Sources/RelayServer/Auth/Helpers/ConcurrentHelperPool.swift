import RelayCore
import RelayIO

/// Basic and Digest helpers (stateless lookups): `processes` copies of one helper, each
/// taking up to `concurrency` requests at once by channel id (or one at a time for helpers
/// without channel ids), a bounded queue in front, and a timeout on every request.
///
/// Call from any thread. The processes and the queue belong to `loop`, where completions
/// run (callers hop back to their own loop), and are reached there through a `LoopBound`.
public final class ConcurrentHelperPool: Sendable {
    public let command: ChildCommand
    public let configuration: HelperPoolConfiguration
    private let loop: EventLoop
    private let members: LoopBound<Members>

    /// Starts `configuration.processes` copies of `command` on `loop`.
    public init(command: ChildCommand, configuration: HelperPoolConfiguration, loop: EventLoop, log: RelayLog) {
        self.command = command
        self.configuration = configuration
        self.loop = loop
        let members = LoopBound(sending: Members(configuration: configuration, loop: loop), on: loop)
        self.members = members
        loop.execute { members.value.start(command: command, log: log) }
    }

    /// Asks the helper whether `password` is right for `user` (Squid's Basic protocol).
    /// `completion` runs once, on the pool's loop.
    public func basic(user: String, password: String, completion: @escaping @Sendable (HelperVerdict) -> Void) {
        lookup(HelperRequestLine.basic(user: user, password: password), refused: HelperVerdict.invalidInput,
               read: HelperVerdict.init, completion: completion)
    }

    /// Asks the helper for `H(user:realm:password)` (Squid's Digest protocol); the relay
    /// computes and checks the client's response itself. `completion` runs once, on the loop.
    public func digestHA1(user: String, realm: String, completion: @escaping @Sendable (HelperDigestAnswer) -> Void) {
        lookup(HelperRequestLine.digest(user: user, realm: realm), refused: HelperDigestAnswer.invalidInput,
               read: HelperDigestAnswer.init, completion: completion)
    }

    private func lookup<Answer>(_ line: Result<[UInt8], HelperInputError>,
                                refused: @escaping @Sendable (HelperInputError) -> Answer,
                                read: @escaping @Sendable (HelperProcess.Outcome) -> Answer,
                                completion: @escaping @Sendable (Answer) -> Void) {
        loop.execute { [members] in
            switch line {
            case .success(let request): members.value.submit(request) { completion(read($0)) }
            case .failure(let error): completion(refused(error))
            }
        }
    }

    /// Kills every helper process; waiting and in-flight requests are answered broken.
    public func close() {
        loop.execute { [members] in members.value.close() }
    }

    /// The running children's pids (tests kill them).
    func pids() -> [Int32] {
        loop.sync { members.value.processes.compactMap(\.pid) }
    }

    deinit {
        // Dropped without close(): the children must not outlive their pool.
        let members = self.members
        loop.execute { members.value.processes.forEach { $0.close() } }
    }

    /// How many children each process has started (tests check restarts stay rare).
    func starts() -> [Int] {
        loop.sync { members.value.processes.map(\.generation) }
    }

    /// The processes and the requests waiting for a free channel: the pool's state on its loop.
    private final class Members {
        private struct Waiting {
            let id: UInt64
            let request: [UInt8]
            let deadline: UInt64
            let timer: LoopTimer
            let completion: HelperProcess.Completion
        }

        private let configuration: HelperPoolConfiguration
        private let loop: EventLoop
        private(set) var processes: [HelperProcess] = []
        private var queue: [Waiting] = []
        private var nextWaitingID: UInt64 = 1
        private var isClosed = false

        init(configuration: HelperPoolConfiguration, loop: EventLoop) {
            self.configuration = configuration
            self.loop = loop
        }

        func start(command: ChildCommand, log: RelayLog) {
            processes = (0..<configuration.processes).map { _ in
                let process = HelperProcess(command: command, concurrency: configuration.concurrency,
                                            maxLineLength: configuration.maxLineLength,
                                            minimumRestartInterval: configuration.minimumRestartInterval,
                                            loop: loop, log: log)
                process.onChange = { [weak self] in self?.drain() }
                return process
            }
            processes.forEach { $0.start() }
        }

        func close() {
            guard !isClosed else { return }
            isClosed = true
            processes.forEach { $0.close() }
            failQueue(.broken("helper closed"))
        }

        func submit(_ request: [UInt8], completion: @escaping HelperProcess.Completion) {
            if isClosed { return completion(.broken("helper closed")) }
            if let process = bestProcess() {
                return process.submit(request, timeout: configuration.requestTimeout, completion: completion)
            }
            if processes.allSatisfy(\.isFailing) { return completion(.broken("helper failing to start")) }
            guard queue.count < configuration.maxQueued else { return completion(.overloaded) }
            let id = nextWaitingID
            nextWaitingID += 1
            let timeout = configuration.requestTimeout
            let timer = loop.scheduleTimer(after: timeout) { [weak self] in self?.expire(id) }
            queue.append(Waiting(id: id, request: request, deadline: monotonicNanos() + timeout.monotonicNanos,
                                 timer: timer, completion: completion))
        }

        /// A process with a free channel, running ones first (one waiting for its restart only
        /// when none is running), the least busy first so load spreads.
        private func bestProcess() -> HelperProcess? {
            let open = processes.filter { $0.freeSlots > 0 && !$0.isFailing }
            let running = open.filter(\.isRunning)
            return (running.isEmpty ? open : running).min { $0.inFlight < $1.inFlight }
        }

        private func drain() {
            while !queue.isEmpty, let process = bestProcess() {
                let next = queue.removeFirst()
                next.timer.cancel()
                let now = monotonicNanos()
                let remaining = next.deadline > now ? next.deadline - now : 0
                process.submit(next.request, timeout: .nanoseconds(Int64(remaining)), completion: next.completion)
            }
            if !queue.isEmpty && processes.allSatisfy(\.isFailing) {
                failQueue(.broken("helper failing to start"))
            }
        }

        private func expire(_ id: UInt64) {
            guard let index = queue.firstIndex(where: { $0.id == id }) else { return }
            let expired = queue.remove(at: index)
            expired.completion(.broken("no helper channel free in time"))
        }

        private func failQueue(_ outcome: HelperProcess.Outcome) {
            let failed = queue
            queue.removeAll()
            for waiting in failed {
                waiting.timer.cancel()
                waiting.completion(outcome)
            }
        }
    }
}
