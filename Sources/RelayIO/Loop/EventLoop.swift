import CRelayShims
import Dispatch
import Glibc
import Synchronization

/// One thread running epoll: every socket, buffer and timer of a connection belongs to one
/// loop for life and is touched only on its thread, so none of them needs a lock, and a
/// socket event runs its handler right where epoll reported it.
///
/// Why not Dispatch sources: on Linux libdispatch registers every source through its
/// manager thread and hops to a worker thread per event; a tunnel creates and cancels
/// several sources, and profiling showed the process spending most of its time in those
/// wake-ups. Here an event is a function call and interest changes are one epoll_ctl.
///
/// `execute`, `sync` and `inLoop` may be called from any thread; everything else only on
/// the loop, which each entry point checks. The loop's own state is confined by
/// construction (only `run` and the handlers it calls touch it), which is why this one
/// class is `@unchecked Sendable`: what it hands out (`IORegistration`, `LoopTimer`) is
/// not `Sendable`, and crosses threads only inside a `LoopBound`.
public final class EventLoop: @unchecked Sendable {  // loop state only on its thread; the rest Mutex or Atomic
    public let index: Int
    private let epoll = Epoll()
    private let wakeFD: Int32
    private let threadID = Atomic<UInt>(0)
    private let pendingTasks = Mutex<[@Sendable () -> Void]>([])
    /// True while the loop is in (or about to enter) a blocking epoll_wait: only then does
    /// `execute` write the wake-up descriptor. A loop that is awake finds new tasks before
    /// it waits, so under load most hand-offs (an audit commit answering a loop) cost no
    /// system call on either side.
    private let sleeping = Atomic<Bool>(false)
    // Loop-confined below. These properties, and those of the other loop-confined classes
    // here (IORegistration, SplicePump, ConnectAttempt), skip the runtime exclusivity check,
    // which cost about a hundred TLS-bound calls per tunnel (7% of the relay's user-space
    // instructions on the forward path). The invariant that makes this safe, and that new
    // code must keep: only the loop's thread touches them, and no access to one stays open
    // across a call into a handler, timer or task (run() copies `beforeWaiting` before
    // running it, pops timers one at a time, loads a handler before calling it), so a
    // handler that re-enters cannot overlap an access. A violation would corrupt memory
    // instead of trapping.
    @exclusivity(unchecked) private var registrations: [UInt64: IORegistration] = [:]
    @exclusivity(unchecked) private var nextToken: UInt64 = 1
    /// Socket events handed to registrations so far: tests read it to tell a quiet loop
    /// from one that an unhandled level-triggered event keeps waking.
    @exclusivity(unchecked) private(set) var socketEventsDispatched = 0
    /// Socket events whose registration was gone (a handler earlier in the batch let go):
    /// tests read it to tell an entry left armed in epoll, reported on every wait.
    @exclusivity(unchecked) private(set) var unclaimedSocketEvents = 0
    /// Descriptors left in epoll by a registration that let go of them: disabled one-shot
    /// entries (a finished connect handing its socket on) and, for one pass, armed entries
    /// handed over (`handedOver`). The next registration of the fd re-arms the entry with
    /// one MOD instead of a DEL now and an ADD later. An fd closed meanwhile left epoll with
    /// its last reference; its number's next registration finds no entry (ENOENT) and adds one.
    @exclusivity(unchecked) private var parked: Set<Int32> = []
    /// Parked entries still armed, handed from one registration to the next in one pass
    /// (`IORegistration.deregisterHandingOver()`). One the pass did not register again
    /// leaves epoll before the loop waits: an armed entry without a handler would be
    /// reported on every wait.
    @exclusivity(unchecked) private var handedOver: Set<Int32> = []
    @exclusivity(unchecked) private var timers = TimerHeap()
    @exclusivity(unchecked) private var beforeWaiting: [() -> Void] = []

    init(index: Int) {
        self.index = index
        wakeFD = crelay_eventfd()
        precondition(wakeFD >= 0, "cannot create an event loop's wake-up descriptor: errno \(errno)")
        // Edge-triggered: each write reports once and the counter is never read back (it
        // would take centuries of writes to reach its limit). Without this entry no task
        // handed to a sleeping loop would ever run.
        let watched = epoll.control(.add, wakeFD, events: UInt32(crelay_EV_IN) | UInt32(truncatingIfNeeded: crelay_EV_ET),
                                    token: 0)
        precondition(watched == 0, "cannot watch an event loop's wake-up descriptor: errno \(watched)")
        let started = DispatchSemaphore(value: 0)
        let box = Unmanaged.passRetained(LoopStart(loop: self, started: started))
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<LoopStart>.fromOpaque(context!).takeRetainedValue()
            start.loop.run(started: start.started)
            return nil
        }, box.toOpaque())
        precondition(created == 0, "cannot start an event loop thread: \(created)")
        pthread_detach(thread)
        started.wait()
    }

    /// True on this loop's thread.
    public var inLoop: Bool {
        threadID.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Runs `work` on this loop's thread, after the current event. From any thread: what
    /// `work` captures crosses threads, so it is `Sendable` (a loop-confined object rides
    /// in a `LoopBound`).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pendingTasks.withLock { $0.append(work) }
        // After the append: a loop that set `sleeping` before this checked its tasks and may
        // not have seen this one (see `waitForEvents`). Whoever clears the flag writes.
        if sleeping.load(ordering: .sequentiallyConsistent) && sleeping.exchange(false, ordering: .sequentiallyConsistent) {
            var one: UInt64 = 1
            do throws(IOError) {
                _ = try systemCall("write to the wake-up descriptor") { write(wakeFD, &one, 8) }
            } catch {
                // The loop sleeps on, and the task never runs.
                preconditionFailure("cannot wake event loop \(index): \(error)")
            }
        }
    }

    /// Runs `work` on this loop and returns its result, waiting for it (tests and shutdown
    /// paths; never from another loop, which could deadlock two loops on each other). What
    /// goes in and comes out crosses threads, hence `Sendable`: a loop-confined object
    /// comes out inside a `LoopBound`.
    public func sync<T: Sendable>(_ work: @Sendable () -> T) -> T {
        if inLoop { return work() }
        return withoutActuallyEscaping(work) { escapable in
            let handOff = SyncHandOff(escapable)
            let done = DispatchSemaphore(value: 0)
            execute {
                handOff.run()
                done.signal()
            }
            done.wait()
            return handOff.result()
        }
    }

    /// Crashes when called off this loop: loop-confined state is not locked. Kept in release
    /// builds (it is one compare of thread ids) at the entry points of loop-only APIs.
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inLoop, "loop-confined state touched off loop \(index)", file: file, line: line)
    }

    /// `preconditionInLoop` in debug builds only: for calls made per event or per read,
    /// which a checked entry point (registration, `start`, `LoopBound`) already put on the loop.
    @inline(__always)
    func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "loop-confined state touched off loop \(index)", file: file, line: line)
    }

    /// Runs `work` on this loop once the events, timers and tasks at hand are handled, just
    /// before it waits for more: to batch what one pass over a burst of events produced.
    /// Call on the loop.
    public func beforeNextWait(_ work: @escaping () -> Void) {
        preconditionInLoop()
        beforeWaiting.append(work)
    }

    /// A one-shot timer on this loop; call on the loop, where `fire` runs. The returned
    /// handle owns it: cancel it, or drop it to cancel.
    public func scheduleTimer(after delay: Duration, _ fire: @escaping () -> Void) -> LoopTimer {
        preconditionInLoop()
        let timer = LoopTimer(fire: fire, on: self)
        timers.push(TimerHeap.Entry(deadline: monotonicNanos() + delay.monotonicNanos, state: timer.state))
        return timer
    }

    /// Watches `fd` on this loop; call on the loop. Interest starts empty.
    public func register(_ fd: Int32) -> IORegistration {
        preconditionInLoop()
        let token = nextToken
        nextToken += 1
        handedOver.remove(fd)
        let registration = IORegistration(fd: fd, token: token, loop: self,
                                          parkedInEpoll: parked.remove(fd) != nil)
        registrations[token] = registration
        return registration
    }

    func park(_ fd: Int32) {
        parked.insert(fd)
    }

    /// Parks an armed entry for a registration that follows in this pass.
    func handOver(_ fd: Int32) {
        parked.insert(fd)
        if handedOver.isEmpty {
            beforeNextWait { [self] in dropUnclaimedHandOvers() }
        }
        handedOver.insert(fd)
    }

    private func dropUnclaimedHandOvers() {
        for fd in handedOver where parked.remove(fd) != nil {
            epoll.control(.delete, fd, events: 0, token: 0)
        }
        handedOver.removeAll()
    }

    /// 0 on success, else the errno (after crashing on a programmer error).
    @discardableResult
    func control(_ operation: Epoll.Operation, _ registration: IORegistration, events: UInt32) -> Int32 {
        epoll.control(operation, registration.fd, events: events, token: registration.token)
    }

    func forget(_ registration: IORegistration) {
        registrations.removeValue(forKey: registration.token)
    }

    // MARK: The loop

    private func run(started: DispatchSemaphore) {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        started.signal()
        let capacity = 256
        var tokens = [UInt64](repeating: 0, count: capacity)
        var events = [UInt32](repeating: 0, count: capacity)
        while true {
            // Interrupted, the wait starts over: the tasks and the timeout are looked at again.
            let count: Int32
            do throws(IOError) {
                switch try systemCall("epoll_wait", { waitForEvents(&tokens, &events) }) {
                case .processed(let ready): count = ready
                case .wouldBlock: count = 0
                }
            } catch {
                preconditionFailure("event loop \(index): \(error)")
            }
            for index in 0..<Int(count) {
                dispatchEvent(token: tokens[index], events: events[index])
            }
            let now = monotonicNanos()
            // One at a time: a timer's closure may schedule another timer.
            while let fire = timers.popExpired(now: now) {
                fire()
            }
            runTasks()
            while !beforeWaiting.isEmpty {
                let work = beforeWaiting
                beforeWaiting.removeAll(keepingCapacity: true)
                for item in work { item() }
            }
        }
    }

    /// epoll_wait, blocking until the next timer unless a task is already waiting. The flag
    /// goes up before the tasks are checked and `execute` reads it after appending, so
    /// either this check sees the task or `execute` sees the flag and writes the wake-up.
    /// Returns what epoll_wait returned, with its errno.
    private func waitForEvents(_ tokens: inout [UInt64], _ events: inout [UInt32]) -> Int32 {
        var timeout = timers.millisecondsUntilNext(now: monotonicNanos())
        if timeout != 0 {
            sleeping.store(true, ordering: .sequentiallyConsistent)
            if !pendingTasks.withLock({ $0.isEmpty }) {
                sleeping.store(false, ordering: .sequentiallyConsistent)
                timeout = 0
            }
        }
        let count = epoll.wait(tokens: &tokens, events: &events, timeout: timeout)
        let failure = errno
        sleeping.store(false, ordering: .sequentiallyConsistent)
        errno = failure
        return count
    }

    private func dispatchEvent(token: UInt64, events: UInt32) {
        if token == 0 { return }  // the wake-up descriptor: tasks run after the events
        // A handler earlier in this batch may have deregistered it.
        guard let registration = registrations[token] else {
            unclaimedSocketEvents &+= 1
            return
        }
        socketEventsDispatched &+= 1
        let failed = events & UInt32(crelay_EV_ERR | crelay_EV_HUP) != 0
        registration.reportedFailure = failed
        if registration.oneShotFired() {
            registration.onWritable?()
            return
        }
        if !registration.wantsRead && !registration.wantsWrite {
            return registration.failureOnlyEvent(events)
        }
        if registration.wantsRead && (failed || events & UInt32(crelay_EV_IN) != 0) {
            registration.onReadable?()
        }
        if registration.isRegistered && registration.wantsWrite && (failed || events & UInt32(crelay_EV_OUT) != 0) {
            registration.onWritable?()
        }
    }

    private func runTasks() {
        let tasks = pendingTasks.withLock { tasks in
            let taken = tasks
            tasks.removeAll(keepingCapacity: true)
            return taken
        }
        for task in tasks { task() }
    }
}

/// Carries a caller's non-escaping closure to the loop and its result back. The closure is
/// dropped once it has run, before the caller is released, so it never outlives
/// `withoutActuallyEscaping`.
private final class SyncHandOff<T: Sendable>: Sendable {
    private let state: Mutex<(work: (@Sendable () -> T)?, result: T?)>

    init(_ work: @escaping @Sendable () -> T) {
        state = Mutex((work, nil))
    }

    func run() {
        guard let work = state.withLock({ $0.work.take() }) else { return }
        let result = work()
        state.withLock { $0.result = result }
    }

    func result() -> T {
        state.withLock { $0.result! }
    }
}

private final class LoopStart {
    let loop: EventLoop
    let started: DispatchSemaphore

    init(loop: EventLoop, started: DispatchSemaphore) {
        self.loop = loop
        self.started = started
    }
}
