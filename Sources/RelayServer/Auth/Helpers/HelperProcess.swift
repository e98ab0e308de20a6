import Glibc
import RelayCore
import RelayIO

/// One Squid-protocol helper program kept running (a `ChildProcess`): request lines written
/// to it, its answer lines matched back to requests (by channel id when `concurrency` > 0,
/// else one at a time), every request bounded by a timeout, and the child replaced when it
/// answers out of step.
///
/// Loop-confined: everything here is touched only on `loop`, where completions run; the
/// pools that other threads call hold it inside a `LoopBound`.
final class HelperProcess {
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

    /// Squid's `concurrency=`: 0 sends bare lines one at a time; M > 0 prefixes channel ids
    /// 0..<M and allows M requests in flight.
    let concurrency: Int
    let loop: EventLoop
    private let child: ChildProcess
    private let log: RelayLog
    private let maxLineLength: Int
    /// Called on the loop whenever a slot frees up or the helper starts, fails or stops;
    /// the owning pool sets it on the loop before `start()`.
    var onChange: () -> Void = {}

    private var slots: [Slot]
    /// The running child's output, split into lines; a new child starts a new buffer.
    private var lines: HelperLineBuffer
    private var nextRequestID: UInt64 = 1
    private var isClosed = false

    init(command: ChildCommand, concurrency: Int, maxLineLength: Int, minimumRestartInterval: Duration,
         loop: EventLoop, log: RelayLog) {
        precondition(concurrency >= 0, "helper concurrency cannot be negative")
        self.concurrency = concurrency
        self.loop = loop
        self.log = log
        self.maxLineLength = maxLineLength
        child = ChildProcess(command: command, loop: loop, minimumRestartInterval: minimumRestartInterval)
        slots = Array(repeating: .free, count: max(1, concurrency))
        lines = HelperLineBuffer(maxLineLength: maxLineLength)
    }

    var command: ChildCommand { child.command }
    /// The running child's pid (tests kill it; logs name it).
    var pid: pid_t? { child.pid }
    var isRunning: Bool { child.isRunning }
    /// Recent children died without answering and none is running: requests fail at once.
    var isFailing: Bool { child.isFailing }
    /// Counts started children, so a stateful conversation can tell its child was replaced.
    var generation: Int { child.generation }
    var freeSlots: Int {
        isClosed ? 0 : slots.reduce(0) { count, slot in if case .free = slot { count + 1 } else { count } }
    }
    var inFlight: Int {
        slots.reduce(0) { count, slot in if case .waiting = slot { count + 1 } else { count } }
    }

    /// Starts the first child.
    func start() {
        loop.preconditionInLoop()
        child.onStart = { [weak self] pid in self?.started(pid) }
        child.onOutput = { [weak self] chunk in self?.received(chunk) }
        child.onEnd = { [weak self] ending in self?.ended(ending) }
        child.start()
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
        if sent && child.isRunning {
            child.end(reason: reason)
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
        // Helpers are lookups with no state worth a graceful exit.
        child.close()
        failAll(reason: "helper closed")
        onChange()
    }

    // MARK: The child's life

    private func started(_ pid: pid_t) {
        lines = HelperLineBuffer(maxLineLength: maxLineLength)
        log.log(.info, "helper \(command.name) pid \(pid): started")
        writePending()
        onChange()
    }

    private func ended(_ ending: ChildProcess.Ending) {
        switch ending {
        case .cannotStart(let error):
            log.log(.error, "helper \(command.name): cannot start: \(error)")
            failAll(reason: "helper cannot start")
        case .ended(let pid, let reason, let exit):
            log.log(.notice, "helper \(command.name) pid \(pid): \(reason) (\(exit)); restarting")
            failAll(reason: "helper \(reason)")
        }
        onChange()
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
            child.end(reason: "stopped answering")
        } else {
            onChange()
        }
    }

    /// Hands the lines not yet written to the running child, in one write.
    private func writePending() {
        guard child.isRunning else { return }
        var pending: [UInt8] = []
        for index in slots.indices {
            if case .waiting(let id, let line, false, let timer, let completion) = slots[index] {
                pending += line
                slots[index] = .waiting(id: id, line: [], written: true, timer: timer, completion: completion)
            }
        }
        child.send(pending)
    }

    private func received(_ chunk: UnsafeRawBufferPointer) {
        lines.append(chunk)
        let reading = child.generation
        while child.isRunning && child.generation == reading {
            switch lines.next() {
            case .needMore: return
            case .tooLong: return child.end(reason: "wrote a line over \(maxLineLength) bytes")
            case .line(let line): deliver(line)
            }
        }
    }

    private func deliver(_ line: [UInt8]) {
        guard let (channel, reply) = HelperReply.parse(line, channelled: concurrency > 0) else {
            return child.end(reason: "sent an unreadable line")
        }
        let index = channel ?? 0
        guard slots.indices.contains(index) else { return child.end(reason: "answered an unknown channel") }
        switch slots[index] {
        case .free:
            return child.end(reason: "answered a request never sent")
        case .abandoned:
            slots[index] = .free
            child.noteResponsive()
        case .waiting(_, _, let written, let timer, let completion):
            guard written else { return child.end(reason: "answered a request never sent") }
            timer.cancel()
            slots[index] = .free
            child.noteResponsive()
            log.log(.debug, "helper \(command.name) pid \(pid.map(String.init) ?? "-"): \(reply.code)")
            completion(.reply(reply))
        }
        onChange()
    }
}
