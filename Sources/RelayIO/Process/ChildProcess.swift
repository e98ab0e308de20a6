import CRelayShims
import Glibc

/// A child program kept running on one event loop: started with posix_spawn, its stdin and
/// stdout one socket that the loop's epoll watches (with a pidfd for its exit), bytes
/// written as the socket takes them and handed over as they arrive, and started again, at
/// a bounded rate, whenever it dies or its owner ends it. What the bytes mean is the
/// owner's business: it frames them, matches answers to requests, and says when a child
/// has become useless (`end(reason:)`).
///
/// Loop-confined: everything here is touched only on `loop`, so no thread ever blocks on a
/// child, and the callbacks run there. Not `Sendable`: another thread reaches one only
/// inside a `LoopBound`.
public final class ChildProcess {
    /// Why a child is gone.
    public enum Ending: Sendable, Equatable {
        /// No child could be started (socketpair or posix_spawn failed).
        case cannotStart(IOError)
        /// A running child ended: `reason` says why (it exited, closed its output, stopped
        /// reading, or its owner ended it), for logs; `exit` is how the reaped process ended.
        case ended(pid: pid_t, reason: String, exit: ChildExit)
    }

    /// A running child and the I/O state that dies with it.
    private final class Running {
        let spawned: SpawnedChild
        let socket: IORegistration
        let exitWatch: IORegistration?
        var outbound: [UInt8] = []
        /// It answered its owner at least once: its death is no sign of a broken program.
        var responsive = false

        init(spawned: SpawnedChild, socket: IORegistration, exitWatch: IORegistration?) {
            self.spawned = spawned
            self.socket = socket
            self.exitWatch = exitWatch
        }
    }

    /// What each child runs.
    public let command: ChildCommand
    /// The loop that owns the child's descriptors and runs the callbacks.
    public let loop: EventLoop
    /// A child started (its pid given); bytes for it can be sent from here on.
    public var onStart: (pid_t) -> Void = { _ in }
    /// Bytes the child wrote, as read. The owner may `end(reason:)` the child from here.
    public var onOutput: (UnsafeRawBufferPointer) -> Void = { _ in }
    /// The child is gone, or none could be started; the next start is already scheduled.
    /// `close()` ends a child without calling this.
    public var onEnd: (Ending) -> Void = { _ in }

    private var running: Running?
    private var restart: ChildRestartPolicy
    private var restartTimer: LoopTimer?
    private var isClosed = false
    /// Counts starts, so an owner can tell its child was replaced.
    public private(set) var generation = 0

    /// Starts nothing yet: call `start()` on the loop. A dead child is started again no
    /// sooner than `minimumRestartInterval` after the previous start.
    public init(command: ChildCommand, loop: EventLoop, minimumRestartInterval: Duration) {
        self.command = command
        self.loop = loop
        restart = ChildRestartPolicy(minimumInterval: minimumRestartInterval)
    }

    /// The running child's pid.
    public var pid: pid_t? { running?.spawned.pid }
    /// A child is running (none while one waits for its restart, or after `close()`).
    public var isRunning: Bool { running != nil }
    /// Recent children died without answering and none is running: the owner should fail
    /// requests at once rather than queue them for a child that may never come up.
    public var isFailing: Bool { !isRunning && restart.isFailing }

    /// Starts the first child.
    public func start() {
        loop.preconditionInLoop()
        startChild()
    }

    /// Queues `bytes` for the running child and writes what its socket takes now; the rest
    /// goes as it drains. False, and nothing queued, when no child is running.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        loop.preconditionInLoop()
        guard let current = running else { return false }
        current.outbound += bytes
        flush()
        return true
    }

    /// The child answered: it works, whatever it said, so its death is met by a restart at
    /// the normal pace.
    public func noteResponsive() {
        loop.preconditionInLoop()
        running?.responsive = true
        restart.answered()
    }

    /// Ends the running child, which its owner found useless (out of step, silent, broken):
    /// it is killed and reaped, `onEnd` runs, and a fresh child follows.
    public func end(reason: String) {
        loop.preconditionInLoop()
        guard let ending = running else { return }
        let exit = stop(ending)
        scheduleRestart(responsive: ending.responsive)
        onEnd(.ended(pid: ending.spawned.pid, reason: reason, exit: exit))
    }

    /// Kills the child and starts nothing again.
    public func close() {
        loop.preconditionInLoop()
        guard !isClosed else { return }
        isClosed = true
        restartTimer?.cancel()
        restartTimer = nil
        if let running {
            // Killing keeps shutdown bounded even when a child is stuck in a slow lookup.
            stop(running)
        }
    }

    // MARK: Starting and stopping

    private func startChild() {
        guard !isClosed, running == nil else { return }
        restartTimer = nil
        generation += 1
        restart.started(now: monotonicNanos())
        let spawned: SpawnedChild
        do {
            spawned = try SpawnedChild.spawn(command)
        } catch {
            scheduleRestart(responsive: false)
            onEnd(.cannotStart(error))
            return
        }
        let socket = loop.register(spawned.socket)
        var exitWatch: IORegistration?
        if spawned.pidfd >= 0 {
            exitWatch = loop.register(spawned.pidfd)
        }
        let started = Running(spawned: spawned, socket: socket, exitWatch: exitWatch)
        running = started
        socket.onReadable = { [weak self, unowned started] in self?.readAvailable(from: started) }
        socket.onWritable = { [weak self] in self?.flush() }
        socket.setInterest(read: true, write: false)
        exitWatch?.onReadable = { [weak self, unowned started] in self?.exited(started) }
        exitWatch?.setInterest(read: true, write: false)
        onStart(spawned.pid)
    }

    private func scheduleRestart(responsive: Bool) {
        let delay = restart.died(answeredAnything: responsive, now: monotonicNanos())
        restartTimer = loop.scheduleTimer(after: .nanoseconds(Int64(delay))) { [weak self] in
            self?.startChild()
        }
    }

    /// Closes our descriptors, kills and reaps the child.
    @discardableResult
    private func stop(_ ending: Running) -> ChildExit {
        running = nil
        ending.socket.deregister(fdClosing: true)
        Glibc.close(ending.spawned.socket)
        if let exitWatch = ending.exitWatch {
            exitWatch.deregister(fdClosing: true)
            Glibc.close(ending.spawned.pidfd)
        }
        return ChildExit.reap(ending.spawned.pid)
    }

    private func exited(_ watched: Running) {
        guard running === watched else { return }
        // Output written just before exiting is still in the socket: deliver it first.
        readAvailable(from: watched)
        if running === watched { end(reason: "exited") }
    }

    // MARK: Bytes

    private func flush() {
        guard let current = running else { return }
        var sent = 0
        sending: while sent < current.outbound.count {
            do throws(IOError) {
                let result = try systemCall("send to a child") {
                    current.outbound.withUnsafeBytes { bytes in
                        crelay_send_nosignal(current.spawned.socket, bytes.baseAddress! + sent, bytes.count - sent)
                    }
                }
                switch result {
                case .processed(let count): sent += count
                case .wouldBlock: break sending
                }
            } catch {
                return end(reason: "stopped reading (errno \(error.errno))")
            }
        }
        current.outbound.removeFirst(sent)
        current.socket.setInterest(read: true, write: !current.outbound.isEmpty)
    }

    private func readAvailable(from reading: Running) {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while running === reading {
            let count: Int
            do throws(IOError) {
                let result = try systemCall("read from a child") {
                    chunk.withUnsafeMutableBytes { Glibc.read(reading.spawned.socket, $0.baseAddress, $0.count) }
                }
                switch result {
                case .processed(let read): count = read
                case .wouldBlock: return
                }
            } catch {
                return end(reason: "output failed (errno \(error.errno))")
            }
            if count == 0 { return end(reason: "closed its output") }
            chunk.withUnsafeBytes { onOutput(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }
}
