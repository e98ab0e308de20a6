import CRelayShims
import Glibc
import RelayCore
import RelayIO

/// One Squid-protocol helper program kept running: started with posix_spawn, fed request
/// lines, its answer lines matched back to requests (by channel id when `concurrency` > 0,
/// else one at a time), restarted with a bounded rate when it dies, and killed on `close()`.
///
/// Loop-confined: everything here is touched only on `loop`, whose epoll watches the
/// helper's socket and pidfd, so no thread ever blocks on a helper. Completions run there.
final class HelperProcess: @unchecked Sendable {
    /// What came back for one request.
    enum Outcome {
        case reply(HelperReply)
        /// The helper died, timed out, sent garbage, or cannot be started; the reason is for
        /// logs and never holds request data.
        case broken(String)
        /// Never reached a helper: the pool's wait queue was full.
        case overloaded
    }

    typealias Completion = (Outcome) -> Void

    private enum Slot {
        case free
        /// `line` is written when a child is running (it may be waiting for a restart).
        case waiting(id: UInt64, line: [UInt8], written: Bool, timer: LoopTimer, completion: Completion)
        /// Timed out and answered `.broken`, but the helper may still answer on this channel:
        /// the channel stays taken until it does, so a late answer never meets a new request.
        case abandoned
    }

    /// A running child and the I/O state that dies with it.
    private final class Child {
        let spawned: SpawnedHelper
        let socket: IORegistration
        let pidWatch: IORegistration?
        var lines: HelperLineBuffer
        var outbound: [UInt8] = []
        var answeredAnything = false

        init(spawned: SpawnedHelper, socket: IORegistration, pidWatch: IORegistration?, maxLineLength: Int) {
            self.spawned = spawned
            self.socket = socket
            self.pidWatch = pidWatch
            lines = HelperLineBuffer(maxLineLength: maxLineLength)
        }
    }

    let command: HelperCommand
    /// Squid's `concurrency=`: 0 sends bare lines one at a time; M > 0 prefixes channel ids
    /// 0..<M and allows M requests in flight.
    let concurrency: Int
    let loop: EventLoop
    private let log: RelayLog
    private let maxLineLength: Int
    /// Called on the loop whenever a slot frees up or the helper starts, fails or stops;
    /// the owning pool sets it on the loop before `start()`.
    var onChange: () -> Void = {}

    private var slots: [Slot]
    private var child: Child?
    private var restart: HelperRestartPolicy
    private var restartTimer: LoopTimer?
    private var nextRequestID: UInt64 = 1
    private var isClosed = false
    /// Counts started children, so a stateful conversation can tell its child was replaced.
    private(set) var generation = 0

    init(command: HelperCommand, concurrency: Int, maxLineLength: Int, minimumRestartInterval: Duration,
         loop: EventLoop, log: RelayLog) {
        precondition(concurrency >= 0, "helper concurrency cannot be negative")
        self.command = command
        self.concurrency = concurrency
        self.loop = loop
        self.log = log
        self.maxLineLength = maxLineLength
        slots = Array(repeating: .free, count: max(1, concurrency))
        restart = HelperRestartPolicy(minimumInterval: minimumRestartInterval)
    }

    /// The running child's pid (tests kill it; logs name it).
    var pid: pid_t? { child?.spawned.pid }
    var isRunning: Bool { child != nil }
    /// Recent children died without answering and none is running: requests fail at once.
    var isFailing: Bool { !isRunning && restart.isFailing }
    var freeSlots: Int {
        isClosed ? 0 : slots.reduce(0) { count, slot in if case .free = slot { count + 1 } else { count } }
    }
    var inFlight: Int {
        slots.reduce(0) { count, slot in if case .waiting = slot { count + 1 } else { count } }
    }

    /// Starts the first child.
    func start() {
        loop.preconditionInLoop()
        startChild()
    }

    /// Sends `request` (one line, no newline, already validated) and calls `completion`
    /// once, on the loop, with the answer or `.broken` after `timeout`.
    func submit(_ request: [UInt8], timeout: Duration, completion: @escaping Completion) {
        loop.preconditionInLoop()
        if isClosed { return completion(.broken("helper closed")) }
        if isFailing { return completion(.broken("helper failing to start")) }
        guard let index = slots.firstIndex(where: { if case .free = $0 { true } else { false } }) else {
            return completion(.broken("no free helper channel"))
        }
        let id = nextRequestID
        nextRequestID += 1
        var line: [UInt8] = concurrency > 0 ? Array("\(index) ".utf8) : []
        line += request
        line.append(UInt8(ascii: "\n"))
        let timer = loop.scheduleTimer(after: timeout) { [weak self] in
            self?.timedOut(index: index, id: id, after: timeout)
        }
        slots[index] = .waiting(id: id, line: line, written: false, timer: timer, completion: completion)
        writePending()
    }

    /// Drops whatever is in flight (a stateful handshake was abandoned mid-request): a child
    /// that was sent it is killed, since its next line would answer the dropped request, and
    /// starts again as after any death. Completions still run, with `.broken`.
    func abandonInFlight(reason: String) {
        loop.preconditionInLoop()
        let sent = slots.contains { slot in
            switch slot {
            case .waiting(_, _, true, _, _), .abandoned: true
            default: false
            }
        }
        if sent && child != nil {
            childEnded(reason: reason)
        } else {
            failAll(reason: "helper \(reason)")
            onChange()
        }
    }

    /// Kills the child, fails everything in flight, and starts nothing again.
    func close() {
        loop.preconditionInLoop()
        guard !isClosed else { return }
        isClosed = true
        restartTimer?.cancel()
        restartTimer = nil
        if let child {
            // Helpers are lookups with no state worth a graceful exit; killing keeps shutdown
            // bounded even when one is stuck in a slow directory query.
            stopChild(child)
        }
        failAll(reason: "helper closed")
        onChange()
    }

    // MARK: Children

    private func startChild() {
        guard !isClosed, child == nil else { return }
        restartTimer = nil
        generation += 1
        restart.started(now: monotonicNanos())
        let spawned: SpawnedHelper
        do {
            spawned = try SpawnedHelper.spawn(command)
        } catch {
            log.log(.error, "helper \(command.name): cannot start: \(error)")
            failAll(reason: "helper cannot start")
            scheduleRestart(answeredAnything: false)
            onChange()
            return
        }
        let socket = loop.register(spawned.socket)
        var pidWatch: IORegistration?
        if spawned.pidfd >= 0 {
            pidWatch = loop.register(spawned.pidfd)
        }
        let started = Child(spawned: spawned, socket: socket, pidWatch: pidWatch, maxLineLength: maxLineLength)
        child = started
        socket.onReadable = { [weak self, unowned started] in self?.readAvailable(from: started) }
        socket.onWritable = { [weak self] in self?.flush() }
        socket.setInterest(read: true, write: false)
        pidWatch?.onReadable = { [weak self, unowned started] in self?.exited(started) }
        pidWatch?.setInterest(read: true, write: false)
        log.log(.info, "helper \(command.name) pid \(spawned.pid): started")
        writePending()
        onChange()
    }

    private func scheduleRestart(answeredAnything: Bool) {
        let delay = restart.died(answeredAnything: answeredAnything, now: monotonicNanos())
        restartTimer = loop.scheduleTimer(after: .nanoseconds(Int64(delay))) { [weak self] in
            self?.startChild()
        }
    }

    /// The child is gone or useless: reap it, fail what it held, plan the next start.
    private func childEnded(reason: String) {
        guard let ended = child else { return }
        let status = stopChild(ended)
        log.log(.notice, "helper \(command.name) pid \(ended.spawned.pid): \(reason) (\(status)); restarting")
        failAll(reason: "helper \(reason)")
        scheduleRestart(answeredAnything: ended.answeredAnything)
        onChange()
    }

    /// Closes our descriptors, kills and reaps the child; returns how it ended, for logs.
    @discardableResult
    private func stopChild(_ ending: Child) -> String {
        child = nil
        ending.socket.deregister(fdClosing: true)
        Glibc.close(ending.spawned.socket)
        if let pidWatch = ending.pidWatch {
            pidWatch.deregister(fdClosing: true)
            Glibc.close(ending.spawned.pidfd)
        }
        return Self.reap(ending.spawned.pid)
    }

    /// Collects the child's exit status so it leaves no zombie. One that has not exited yet
    /// is killed first: its output is closed or out of step, so it can never be used again,
    /// and SIGKILL makes the wait that follows short.
    private static func reap(_ pid: pid_t) -> String {
        var status: Int32 = 0
        var reaped = waitpid(pid, &status, WNOHANG)
        if reaped == 0 {
            kill(pid, SIGKILL)
            repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
        }
        // ECHILD: someone set SIGCHLD to SIG_IGN and the kernel reaped it already.
        guard reaped == pid else { return "exit status unknown" }
        let signal = status & 0x7f
        if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
        return "killed by signal \(signal)"
    }

    private func exited(_ watched: Child) {
        guard child === watched else { return }
        // An answer written just before exiting is still in the socket: deliver it first.
        readAvailable(from: watched)
        if child === watched { childEnded(reason: "exited") }
    }

    // MARK: Requests

    private func failAll(reason: String) {
        let failed = slots
        slots = Array(repeating: .free, count: slots.count)
        for slot in failed {
            if case .waiting(_, _, _, let timer, let completion) = slot {
                timer.cancel()
                completion(.broken(reason))
            }
        }
    }

    private func timedOut(index: Int, id: UInt64, after timeout: Duration) {
        guard case .waiting(let waitingID, _, let written, _, let completion) = slots[index], waitingID == id else { return }
        log.log(.notice, "helper \(command.name) pid \(pid.map(String.init) ?? "-"): no answer in \(timeout)")
        // Never written (no child came up in time): no answer can follow, the slot is free.
        slots[index] = written ? .abandoned : .free
        completion(.broken("helper did not answer in time"))
        // Without channels the next answer would be this one's; with every channel stuck the
        // helper is useless. Either way only a fresh child is safe.
        let allAbandoned = slots.allSatisfy { if case .abandoned = $0 { true } else { false } }
        if written && (concurrency == 0 || allAbandoned) {
            childEnded(reason: "stopped answering")
        } else {
            onChange()
        }
    }

    private func writePending() {
        guard let running = child else { return }
        for index in slots.indices {
            if case .waiting(let id, let line, false, let timer, let completion) = slots[index] {
                running.outbound += line
                slots[index] = .waiting(id: id, line: [], written: true, timer: timer, completion: completion)
            }
        }
        flush()
    }

    private func flush() {
        guard let running = child else { return }
        var sent = 0
        while sent < running.outbound.count {
            let result = running.outbound.withUnsafeBytes { bytes in
                crelay_send_nosignal(running.spawned.socket, bytes.baseAddress! + sent, bytes.count - sent)
            }
            if result < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { break }
                return childEnded(reason: "stopped reading (errno \(errno))")
            }
            sent += result
        }
        running.outbound.removeFirst(sent)
        running.socket.setInterest(read: true, write: !running.outbound.isEmpty)
    }

    private func readAvailable(from reading: Child) {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while child === reading {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(reading.spawned.socket, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { return }
                return childEnded(reason: "output failed (errno \(errno))")
            }
            if count == 0 { return childEnded(reason: "closed its output") }
            chunk.withUnsafeBytes { reading.lines.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            lines: while child === reading {
                switch reading.lines.next() {
                case .needMore: break lines
                case .tooLong: return childEnded(reason: "wrote a line over \(maxLineLength) bytes")
                case .line(let line): deliver(line, from: reading)
                }
            }
        }
    }

    private func deliver(_ line: [UInt8], from answering: Child) {
        guard let (channel, reply) = HelperReply.parse(line, channelled: concurrency > 0) else {
            return childEnded(reason: "sent an unreadable line")
        }
        let index = channel ?? 0
        guard slots.indices.contains(index) else { return childEnded(reason: "answered an unknown channel") }
        switch slots[index] {
        case .free:
            return childEnded(reason: "answered a request never sent")
        case .abandoned:
            slots[index] = .free
            answering.answeredAnything = true
            restart.answered()
        case .waiting(_, _, let written, let timer, let completion):
            guard written else { return childEnded(reason: "answered a request never sent") }
            timer.cancel()
            slots[index] = .free
            answering.answeredAnything = true
            restart.answered()
            log.log(.debug, "helper \(command.name) pid \(answering.spawned.pid): \(reply.code)")
            completion(.reply(reply))
        }
        onChange()
    }
}
