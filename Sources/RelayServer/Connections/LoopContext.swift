import RelayCore
import RelayIO

/// Something on a loop that the idle sweep may close.
protocol IdleTracked: AnyObject {
    /// Monotonic nanoseconds of the last byte moved.
    var lastActivity: UInt64 { get }
    /// Close because nothing moved for the idle timeout.
    func idleTimedOut()
    /// Monotonic nanoseconds since which bytes have waited for a peer that takes none; nil
    /// while nothing waits.
    var stalledSince: UInt64? { get }
    /// Close because a peer took none of the bytes queued for it for the stall timeout.
    func stallTimedOut()
    /// Close now because the server is stopping and the drain deadline passed.
    func abortForShutdown()
}

extension IdleTracked {
    /// Nothing queued, by default: only what relays bytes can stall.
    var stalledSince: UInt64? { nil }

    func stallTimedOut() {}
}

/// The state one event loop owns: its pipe pool, its read buffer, the connections on it.
/// Loop-confined: touched only on `loop`'s thread, so not `Sendable`; the server holds
/// each one in a `LoopBound`.
final class LoopContext {
    let loop: EventLoop
    let shared: ServerShared
    let pipes = PipePool()
    /// Buffers for relays that copy in user space (`TLSRelayPump`): a tunnel of an HTTPS
    /// listener's client.
    let relayBuffers = RelayBufferPool()
    /// One read buffer per loop: reads are handled to completion before the next event.
    let scratch: UnsafeMutableRawBufferPointer
    private var tracked: [ObjectIdentifier: IdleTracked] = [:]
    private var sweeper: LoopTimer?
    private var auditKickArmed = false
    /// Sweeps since the host's interface addresses were last read (loop 0 only).
    private var sweepsSinceInterfaceRead = 0
    /// Sweeps (seconds) between reads of the host's interface addresses.
    private static let sweepsPerInterfaceRead = 10
    private var reportedDroppedRows: UInt64 = 0

    init(loop: EventLoop, shared: ServerShared) {
        self.loop = loop
        self.shared = shared
        self.scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        scratch.deallocate()
    }

    /// Starts the audit commit of the open rows this pass over the loop's events appended,
    /// once the pass is done: a burst of accepted connections shares one commit (and one
    /// wake-up of the audit thread) instead of the first one committing alone.
    func kickAuditBeforeWaiting() {
        guard !auditKickArmed else { return }
        auditKickArmed = true
        loop.beforeNextWait { [self] in
            auditKickArmed = false
            shared.audit.log.kick()
        }
    }

    /// Number of live connections and tunnels on this loop.
    var trackedCount: Int { tracked.count }

    func track(_ item: IdleTracked) {
        tracked[ObjectIdentifier(item)] = item
    }

    func untrack(_ item: IdleTracked) {
        tracked.removeValue(forKey: ObjectIdentifier(item))
    }

    /// Starts the once-a-second idle sweep; one timer per loop instead of one per connection
    /// keeps an idle tunnel cheap.
    func startSweeping() {
        sweeper = loop.scheduleTimer(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.sweep()
            self.startSweeping()
        }
    }

    func stopSweeping() {
        sweeper?.cancel()
        sweeper = nil
    }

    private func sweep() {
        let timeouts = shared.settings.timeouts
        let idleNanos = timeouts.idle.monotonicNanos
        let stallNanos = timeouts.stall.monotonicNanos
        let now = monotonicNanos()
        for item in Array(tracked.values) {
            if now &- item.lastActivity > idleNanos {
                item.idleTimedOut()
            } else if let since = item.stalledSince, now &- since > stallNanos {
                item.stallTimedOut()
            }
        }
        if loop.index == 0 {
            sweepsSinceInterfaceRead += 1
            if sweepsSinceInterfaceRead >= Self.sweepsPerInterfaceRead {
                sweepsSinceInterfaceRead = 0
                shared.refreshInterfaceAddresses()
            }
            shared.recordRefusals()
            reportDroppedAuditRows()
            shared.sweepAuthenticators()
        }
    }

    /// Audit rows given up after their attempts are rare and serious: the first loop's sweep
    /// says so in the log, once per second at most.
    private func reportDroppedAuditRows() {
        let dropped = shared.audit.log.droppedCount
        guard dropped > reportedDroppedRows else { return }
        shared.logger.log(.error, "audit: \(dropped - reportedDroppedRows) rows could not be stored after \(AuditLog.maxAttempts) attempts (\(dropped) since start)")
        reportedDroppedRows = dropped
    }

    func abortAll() {
        for item in Array(tracked.values) {
            item.abortForShutdown()
        }
    }
}
