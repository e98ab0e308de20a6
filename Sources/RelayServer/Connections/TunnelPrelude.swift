import RelayCore
import RelayIO

/// Bytes a tunnel owes each side before its bulk relay takes over, written through the
/// streams themselves: `TLSRelayPump`, unlike `SplicePump`, starts with nothing queued, and
/// a TLS client's bytes must go out through its TLS (the `200`, what inspection judged but
/// the kernel had not taken yet, what came behind the CONNECT).
///
/// Loop-confined: touched only on its loop's thread, so not `Sendable`.
final class TunnelPrelude {
    private let toClient: BufferedWriter
    private let toUpstream: BufferedWriter
    private var done: ((ReasonCode?) -> Void)?
    private(set) var lastActivity = monotonicNanos()

    init(client: any RelayStream, upstream: any RelayStream) {
        toClient = BufferedWriter(socket: client)
        toUpstream = BufferedWriter(socket: upstream)
    }

    /// Since when queued bytes have waited for a side that takes none.
    var stalledSince: UInt64? {
        earliest(toClient.stalledSince, toUpstream.stalledSince)
    }

    /// Queues the bytes; `done` runs once, on the loop: nil when all were written, else why
    /// a side failed. Both streams stay the caller's either way.
    func start(toClient clientBytes: [UInt8], toUpstream upstreamBytes: [UInt8], done: @escaping (ReasonCode?) -> Void) {
        self.done = done
        toClient.onError = { [unowned self] _ in end(.clientReset) }
        toUpstream.onError = { [unowned self] _ in end(.upstreamReset) }
        toClient.onDrained = { [unowned self] in progressed() }
        toUpstream.onDrained = { [unowned self] in progressed() }
        toClient.enqueue(clientBytes)
        toUpstream.enqueue(upstreamBytes)
        progressed()
    }

    /// Ends it now (a timeout, shutdown) with `reason`.
    func abort(_ reason: ReasonCode) {
        end(reason)
    }

    private func progressed() {
        lastActivity = monotonicNanos()
        if toClient.pendingBytes == 0 && toUpstream.pendingBytes == 0 { end(nil) }
    }

    private func end(_ reason: ReasonCode?) {
        guard let done else { return }
        self.done = nil
        toClient.onError = nil
        toClient.onDrained = nil
        toUpstream.onError = nil
        toUpstream.onDrained = nil
        done(reason)
    }
}
