import CRelayShims
import Glibc

/// A file descriptor watched by one loop, with the handlers to run when it is ready.
/// Level-triggered: a handler should make progress (read or write until EAGAIN) or drop its
/// interest. A descriptor with no interest is taken out of epoll, because epoll reports
/// hang-ups and errors even for an empty mask, which would spin the loop, unless its owner
/// asks to hear of errors (`onFailure`): then it stays with an empty mask until it fails or
/// hangs up.
/// Loop-confined: made by `EventLoop.register` and touched only on its loop's thread, so
/// not `Sendable` (another thread reaches one only inside a `LoopBound`).
public final class IORegistration {
    public let fd: Int32
    let token: UInt64
    // Strong, though the loop's table holds its registrations: a loop never ends (its
    // thread holds it for the life of the process), so the cycle leaks nothing, and a
    // strong `let` costs one retain per registration where `unowned` cost a checked
    // retain and release at every use (each interest change).
    private let loop: EventLoop
    /// Runs when the fd is readable (or failed) while `wantsRead`.
    @exclusivity(unchecked) public var onReadable: (() -> Void)?
    /// Runs when the fd is writable (or failed) while `wantsWrite`, and for the one event
    /// of `armWriteOnce`.
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
        loop.assertInLoop()
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
        loop.preconditionInLoop()
        guard isRegistered else { return }
        precondition(!exclusive, "a shared listener is never armed once")
        wantsRead = false
        wantsWrite = true
        oneShot = true
        apply(UInt32(crelay_EV_OUT) | UInt32(crelay_EV_ONESHOT))
    }

    private func leaveEpoll() {
        loop.control(.delete, self, events: 0)
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
            let failure = loop.control(.modify, self, events: mask)
            if failure == ENOENT && staleEntry {
                // The parked entry left epoll when its fd was closed; this is a new file.
                loop.control(.add, self, events: mask)
            }
            staleEntry = false
        } else {
            let failure = loop.control(.add, self, events: mask)
            if failure == EINVAL && exclusive {
                // A kernel without EPOLLEXCLUSIVE (before 4.5): every watching loop wakes,
                // and all but one find nothing to accept. Slower, still correct.
                exclusive = false
                loop.control(.add, self, events: mask & ~UInt32(crelay_EV_EXCLUSIVE))
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
        loop.preconditionInLoop()
        guard isRegistered else { return }
        if inEpoll && !fdClosing {
            if oneShot && !wantsWrite {
                loop.park(fd)
            } else {
                loop.control(.delete, self, events: 0)
            }
        }
        dropFromLoop()
    }

    /// Stops watching an fd that is registered again on this loop, and given its interest,
    /// before the loop next waits (a connection handing its sockets to a relay): the entry
    /// stays, armed as it is, and the next registration's first `setInterest` re-arms it
    /// with one MOD instead of a DEL now and an ADD then.
    public func deregisterHandingOver() {
        loop.preconditionInLoop()
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
