import CRelayShims
import Dispatch
import Glibc
import Synchronization

/// One thread running epoll: every socket, buffer and timer of a connection belongs to one
/// loop for life and is touched only on its thread, so none of them needs a lock, and a
/// socket event runs its handler right where epoll reported it.
///
/// Why not Dispatch sources (the first design): on Linux libdispatch registers every source
/// through its manager thread and hops to a worker thread per event; a tunnel creates and
/// cancels several sources, and profiling showed the process spending most of its time in
/// those wake-ups. Here an event is a function call and interest changes are one epoll_ctl.
public final class EventLoop: @unchecked Sendable {
    public let index: Int
    private let epollFD: Int32
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
        epollFD = crelay_epoll_create()
        wakeFD = crelay_eventfd()
        precondition(epollFD >= 0 && wakeFD >= 0, "cannot create an event loop: errno \(errno)")
        // Edge-triggered: each write reports once and the counter is never read back (it
        // would take centuries of writes to reach its limit).
        _ = crelay_epoll_ctl(epollFD, Int32(crelay_CTL_ADD), wakeFD, UInt32(crelay_EV_IN) | UInt32(truncatingIfNeeded: crelay_EV_ET), 0)
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

    /// Runs `work` on this loop's thread, after the current event.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        pendingTasks.withLock { $0.append(work) }
        // After the append: a loop that set `sleeping` before this checked its tasks and may
        // not have seen this one (see `waitForEvents`). Whoever clears the flag writes.
        if sleeping.load(ordering: .sequentiallyConsistent) && sleeping.exchange(false, ordering: .sequentiallyConsistent) {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Runs `work` on this loop and returns its result, waiting for it (tests and shutdown
    /// paths; never from another loop, which could deadlock two loops on each other).
    public func sync<T>(_ work: () -> T) -> T {
        if inLoop { return work() }
        return withoutActuallyEscaping(work) { escapable in
            let box = SyncBox(escapable)
            let done = DispatchSemaphore(value: 0)
            execute {
                box.run()
                done.signal()
            }
            done.wait()
            return box.result!
        }
    }

    /// Crashes in debug builds when called off this loop: loop-confined state is not locked.
    public func preconditionInLoop() {
        #if DEBUG
        precondition(inLoop, "loop-confined state touched off loop \(index)")
        #endif
    }

    /// Runs `work` on this loop once the events, timers and tasks at hand are handled, just
    /// before it waits for more: to batch what one pass over a burst of events produced.
    /// Call on the loop.
    public func beforeNextWait(_ work: @escaping () -> Void) {
        preconditionInLoop()
        beforeWaiting.append(work)
    }

    /// A one-shot timer on this loop. The returned handle owns it: cancel it, or drop it to cancel.
    public func scheduleTimer(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> LoopTimer {
        let nanos = delay.monotonicNanos
        let timer = LoopTimer(fire: fire)
        let entry = TimerHeap.Entry(deadline: monotonicNanos() + nanos, state: timer.state)
        if inLoop {
            timers.push(entry)
        } else {
            execute { [self] in timers.push(entry) }
        }
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
            _ = crelay_epoll_ctl(epollFD, Int32(crelay_CTL_DEL), fd, 0, 0)
        }
        handedOver.removeAll()
    }

    /// 0 on success, else the errno (after crashing on a programmer error).
    @discardableResult
    func control(_ operation: Int32, _ registration: IORegistration, events: UInt32) -> Int32 {
        if crelay_epoll_ctl(epollFD, operation, registration.fd, events, registration.token) != 0 {
            let code = errno
            SocketOptions.checkNotProgrammerError(code, "epoll_ctl")
            return code
        }
        return 0
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
            let (count, failure) = waitForEvents(&tokens, &events, capacity: capacity)
            if count < 0 {
                if failure == EINTR { continue }
                preconditionFailure("epoll_wait: errno \(failure)")
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
    /// Returns epoll_wait's count and, when it is negative, its errno.
    private func waitForEvents(_ tokens: inout [UInt64], _ events: inout [UInt32], capacity: Int) -> (Int32, Int32) {
        var timeout = timers.millisecondsUntilNext(now: monotonicNanos())
        if timeout != 0 {
            sleeping.store(true, ordering: .sequentiallyConsistent)
            if !pendingTasks.withLock({ $0.isEmpty }) {
                sleeping.store(false, ordering: .sequentiallyConsistent)
                timeout = 0
            }
        }
        let count = crelay_epoll_wait(epollFD, &tokens, &events, Int32(capacity), timeout)
        let failure = count < 0 ? errno : 0
        sleeping.store(false, ordering: .sequentiallyConsistent)
        return (count, failure)
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
/// dropped before the caller is released, so it never outlives `withoutActuallyEscaping`.
private final class SyncBox<T>: @unchecked Sendable {
    private var work: (() -> T)?
    var result: T?

    init(_ work: @escaping () -> T) {
        self.work = work
    }

    func run() {
        result = work?()
        work = nil
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

/// A file descriptor watched by one loop, with the handlers to run when it is ready.
/// Level-triggered: a handler should make progress (read or write until EAGAIN) or drop its
/// interest. A descriptor with no interest is taken out of epoll, because epoll reports
/// hang-ups and errors even for an empty mask, which would spin the loop, unless its owner
/// asks to hear of errors (`onFailure`): then it stays with an empty mask until it fails or
/// hangs up.
/// Loop-confined: touched only on its loop's thread.
public final class IORegistration {
    public let fd: Int32
    let token: UInt64
    private unowned let loop: EventLoop
    @exclusivity(unchecked) public var onReadable: (() -> Void)?
    @exclusivity(unchecked) public var onWritable: (() -> Void)?
    /// Runs when the fd reports an error (EPOLLERR: a reset) while it wants neither read
    /// nor write. While set, such an entry stays in epoll with an empty mask, so a peer that
    /// resets a half-closed stream is noticed at once, not at the idle timeout. It returns
    /// false to leave the error for later (the entry then leaves epoll, as it does on a
    /// hang-up without an error, so nothing is reported on every wait).
    @exclusivity(unchecked) public var onFailure: (() -> Bool)?
    @exclusivity(unchecked) public private(set) var wantsRead = false
    @exclusivity(unchecked) public private(set) var wantsWrite = false
    /// Several loops watch this fd (a shared listener): a readiness event wakes one idle
    /// loop instead of all. epoll cannot modify such an entry, so interest may only switch
    /// between read and nothing (re-added each time).
    @exclusivity(unchecked) public var exclusive = false
    /// The last event reported an error or hang-up (EPOLLERR/EPOLLHUP) along with readiness.
    @exclusivity(unchecked) public internal(set) var reportedFailure = false
    @exclusivity(unchecked) private var inEpoll: Bool
    /// The entry's epoll data may still carry another registration's token (a parked entry):
    /// the first interest change must MOD it, or ADD if the entry is gone.
    @exclusivity(unchecked) private var staleEntry: Bool
    /// Armed with `armWriteOnce`: after its one event the entry stays in epoll, disabled.
    @exclusivity(unchecked) private var oneShot = false
    @exclusivity(unchecked) private(set) var isRegistered = true

    init(fd: Int32, token: UInt64, loop: EventLoop, parkedInEpoll: Bool = false) {
        self.fd = fd
        self.token = token
        self.loop = loop
        inEpoll = parkedInEpoll
        staleEntry = parkedInEpoll
    }

    /// Sets what to watch for; a no-op when nothing changes. The first call on a parked
    /// entry always acts, since the entry may still be armed with another owner's mask and
    /// token (a socket handed over): it is re-armed, emptied, or taken out of epoll.
    public func setInterest(read: Bool, write: Bool) {
        guard isRegistered, staleEntry || read != wantsRead || write != wantsWrite else { return }
        wantsRead = read
        wantsWrite = write
        let mask = (read ? UInt32(crelay_EV_IN) : 0) | (write ? UInt32(crelay_EV_OUT) : 0)
            | (exclusive ? UInt32(crelay_EV_EXCLUSIVE) : 0)
        if !read && !write && onFailure != nil && !exclusive {
            apply(0)
        } else if !read && !write {
            leaveEpoll()
        } else {
            apply(mask)
        }
    }

    /// Watches for writability once, as for a connect in progress: after the event the entry
    /// stays in epoll, disabled (no spinning on a level-triggered EPOLLOUT), and a later
    /// `setInterest`, or the fd's next registration once this one is deregistered, re-arms
    /// it with one MOD instead of a DEL and an ADD.
    public func armWriteOnce() {
        guard isRegistered else { return }
        precondition(!exclusive, "a shared listener is never armed once")
        wantsRead = false
        wantsWrite = true
        oneShot = true
        apply(UInt32(crelay_EV_OUT) | UInt32(crelay_EV_ONESHOT))
    }

    private func leaveEpoll() {
        loop.control(Int32(crelay_CTL_DEL), self, events: 0)
        inEpoll = false
        staleEntry = false
        oneShot = false
    }

    /// An event for an entry that wants nothing, kept in epoll for `onFailure`.
    func failureOnlyEvent(_ events: UInt32) {
        // Level-triggered: what is not dealt with now would be reported on every wait.
        if events & UInt32(crelay_EV_ERR) != 0 {
            if onFailure?() != true { leaveEpoll() }
        } else if events & UInt32(crelay_EV_HUP) != 0 {
            leaveEpoll()
        }
    }

    /// Called by the loop before the handlers of an event run. True for an entry armed with
    /// `armWriteOnce`, which epoll has now disabled: it wants nothing until re-armed, and
    /// its event (writable, or an error) goes to `onWritable`.
    func oneShotFired() -> Bool {
        guard oneShot, wantsWrite else { return false }
        wantsWrite = false
        return true
    }

    private func apply(_ mask: UInt32) {
        if inEpoll {
            precondition(!exclusive, "an exclusive epoll entry cannot be modified")
            let failure = loop.control(Int32(crelay_CTL_MOD), self, events: mask)
            if failure == ENOENT && staleEntry {
                // The parked entry left epoll when its fd was closed; this is a new file.
                loop.control(Int32(crelay_CTL_ADD), self, events: mask)
            }
            staleEntry = false
        } else {
            let failure = loop.control(Int32(crelay_CTL_ADD), self, events: mask)
            if failure == EINVAL && exclusive {
                // A kernel without EPOLLEXCLUSIVE (before 4.5): every watching loop wakes,
                // and all but one find nothing to accept. Slower, still correct.
                exclusive = false
                loop.control(Int32(crelay_CTL_ADD), self, events: mask & ~UInt32(crelay_EV_EXCLUSIVE))
            }
            inEpoll = true
        }
        if mask & UInt32(crelay_EV_ONESHOT) == 0 { oneShot = false }
    }

    /// Stops watching; the caller may close the fd right after. With `fdClosing` the caller
    /// promises to close it at once, which removes it from epoll without a system call (the
    /// relay never duplicates descriptors, so the close is the last reference). A fired
    /// one-shot entry is left parked in epoll for the fd's next registration.
    public func deregister(fdClosing: Bool = false) {
        guard isRegistered else { return }
        if inEpoll && !fdClosing {
            if oneShot && !wantsWrite {
                loop.park(fd)
            } else {
                loop.control(Int32(crelay_CTL_DEL), self, events: 0)
            }
        }
        dropFromLoop()
    }

    /// Stops watching an fd that is registered again on this loop, and given its interest,
    /// before the loop next waits (a connection handing its sockets to a relay): the entry
    /// stays, armed as it is, and the next registration's first `setInterest` re-arms it
    /// with one MOD instead of a DEL now and an ADD then.
    public func deregisterHandingOver() {
        guard isRegistered else { return }
        if inEpoll { loop.handOver(fd) }
        dropFromLoop()
    }

    /// Forgets the handlers and leaves the loop's table; the caller has settled the epoll entry.
    private func dropFromLoop() {
        inEpoll = false
        isRegistered = false
        wantsRead = false
        wantsWrite = false
        onReadable = nil
        onWritable = nil
        onFailure = nil
        loop.forget(self)
    }
}

/// A pending one-shot timer; cancelled by `cancel()` or when the handle is dropped.
/// Cancel (and drop) it on its loop: cancelling releases the closure at once, so whatever
/// it captured does not live on until the deadline.
public final class LoopTimer: Sendable {
    final class State: @unchecked Sendable {
        let cancelled = Atomic<Bool>(false)
        /// Set once at init, cleared when fired or cancelled, only on the loop.
        var fire: (@Sendable () -> Void)?

        init(fire: @escaping @Sendable () -> Void) {
            self.fire = fire
        }
    }

    let state: State

    init(fire: @escaping @Sendable () -> Void) {
        state = State(fire: fire)
    }

    public func cancel() {
        state.cancelled.store(true, ordering: .relaxed)
        state.fire = nil
    }

    deinit {
        cancel()
    }
}

/// Deadlines of one loop's timers, earliest first. Cancelled timers are dropped lazily when
/// they reach the top, and swept out whenever the heap doubles, so cancelled entries never
/// outnumber live ones by much even with timeouts of days.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var state: LoopTimer.State
    }

    private static let minimumCompaction = 1024
    private var entries: [Entry] = []
    private var compactAt = TimerHeap.minimumCompaction

    var count: Int { entries.count }

    mutating func push(_ entry: Entry) {
        if entries.count >= compactAt {
            compact()
        }
        entries.append(entry)
        siftUp(entries.count - 1)
    }

    /// Drops cancelled entries and restores the heap order: O(n), at most once per doubling.
    private mutating func compact() {
        entries.removeAll { $0.state.cancelled.load(ordering: .relaxed) }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) {
            siftDown(index)
        }
        compactAt = max(Self.minimumCompaction, entries.count * 2)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            if smallest == parent { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// epoll_wait's timeout: -1 with no timers, else milliseconds rounded up.
    mutating func millisecondsUntilNext(now: UInt64) -> Int32 {
        while let first = entries.first, first.state.cancelled.load(ordering: .relaxed) {
            _ = popFirst()
        }
        guard let first = entries.first else { return -1 }
        if first.deadline <= now { return 0 }
        return Int32(min((first.deadline - now + 999_999) / 1_000_000, 60_000))
    }

    /// The closure of the earliest expired, uncancelled timer, removed from the heap.
    mutating func popExpired(now: UInt64) -> (@Sendable () -> Void)? {
        while let first = entries.first, first.deadline <= now {
            let entry = popFirst()
            guard !entry.state.cancelled.exchange(true, ordering: .relaxed) else { continue }
            let fire = entry.state.fire
            entry.state.fire = nil
            if let fire { return fire }
        }
        return nil
    }

    private mutating func popFirst() -> Entry {
        let first = entries[0]
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }
}

/// The loops of the process; connections are spread over them round robin.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let cursor = Atomic<UInt>(0)

    public init(count: Int) {
        precondition(count > 0, "an event loop group needs at least one loop")
        loops = (0..<count).map { EventLoop(index: $0) }
    }

    /// The next loop in round-robin order.
    public func next() -> EventLoop {
        let value = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(value % UInt(loops.count))]
    }
}
