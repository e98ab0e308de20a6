import RelayCore
import RelayIO

/// The first round trip of a tunnel, read in user space by a `TLSTunnelInspector` before the
/// tunnel gets its bulk relay: both sides are read, and only what the inspector has judged is
/// passed on, so a refused handshake never reaches the app server and no application data
/// flows before the ServerHello is decided. A TLS tunnel spends its handshake's first round
/// trip here, then is relayed as any tunnel is. A plain client's tunnel comes here only when
/// its first bytes do not settle the policy at once (see `TunnelRelay`), with what was read
/// before.
///
/// Loop-confined: touched only on its loop's thread, so not `Sendable`.
final class TunnelInspection {
    /// How the inspection ended.
    enum Outcome {
        /// Allowed: relay from now on, sending these bytes (judged, not yet taken by the
        /// kernel) first. The streams are the caller's again.
        case relay(toUpstream: [UInt8], toClient: [UInt8])
        /// Refused: the alert (if any) was sent and both streams are closed.
        case refused(ReasonCode, detail: String)
        /// A side failed before the decision; both streams are closed.
        case failed(ReasonCode)
    }

    /// Above this many bytes queued for one side, the other side is not read.
    private static let highWater = 64 * 1024

    private let loop: EventLoop
    private let scratch: UnsafeMutableRawBufferPointer
    private let client: any RelayStream
    private let upstream: any RelayStream
    private let toClient: BufferedWriter
    private let toUpstream: BufferedWriter
    private var inspector: TLSTunnelInspector
    private let settings: TLSInspectionSettings
    private var timer: LoopTimer?
    private var decided: ((Outcome) -> Void)?
    /// Payload passed on each way (judged bytes handed to a writer), for the close row.
    private(set) var bytesUp: UInt64 = 0
    private(set) var bytesDown: UInt64 = 0
    private(set) var lastActivity = monotonicNanos()

    init(loop: EventLoop, scratch: UnsafeMutableRawBufferPointer, client: any RelayStream, upstream: any RelayStream,
         inspector: TLSTunnelInspector, settings: TLSInspectionSettings) {
        self.loop = loop
        self.scratch = scratch
        self.client = client
        self.upstream = upstream
        self.toClient = BufferedWriter(socket: client)
        self.toUpstream = BufferedWriter(socket: upstream)
        self.inspector = inspector
        self.settings = settings
    }

    /// What the inspector saw, for the audit row, whatever the outcome.
    var facts: TLSTunnelFacts { inspector.facts }

    /// Since when bytes for a side that takes none have waited, for the stall timeout.
    var stalledSince: UInt64? {
        earliest(toClient.stalledSince, toUpstream.stalledSince)
    }

    /// Sends `toClientFirst` (the relay's own `200`, or what of it the client has not taken:
    /// not payload), feeds `clientLeftover` (bytes that came behind the CONNECT, or were read
    /// already) and `serverLeftover` (read already), then reads both sides until the decision.
    func start(toClientFirst: [UInt8], clientLeftover: [UInt8], serverLeftover: [UInt8] = [],
               decided: @escaping (Outcome) -> Void) {
        self.decided = decided
        toClient.onError = { [unowned self] _ in fail(.clientReset) }
        toUpstream.onError = { [unowned self] _ in fail(.upstreamReset) }
        toClient.onDrained = { [unowned self] in updateReading() }
        toUpstream.onDrained = { [unowned self] in updateReading() }
        // Watched before anything is judged: the sockets' epoll entries were handed to them
        // (`StreamSocket.detachFD`, `SpliceHandOver`) and must be claimed in this loop pass,
        // even when the leftovers settle the tunnel at once and close them.
        client.startReading { [unowned self] in readable(fromClient: true) }
        upstream.startReading { [unowned self] in readable(fromClient: false) }
        toClient.enqueue(toClientFirst)
        guard perform(inspector.start()) else { return }
        if !clientLeftover.isEmpty {
            guard perform(clientLeftover.withUnsafeBytes { inspector.clientBytes($0) }) else { return }
        }
        if !serverLeftover.isEmpty {
            guard perform(serverLeftover.withUnsafeBytes { inspector.serverBytes($0) }) else { return }
        }
        updateReading()
    }

    /// Ends the inspection now (idle timeout, shutdown): both streams close.
    func abort(_ reason: ReasonCode) {
        fail(reason)
    }

    private func readable(fromClient: Bool) {
        let stream = fromClient ? client : upstream
        for _ in 0..<8 where decided != nil {
            switch stream.read(into: scratch) {
            case .bytes(let count):
                lastActivity = monotonicNanos()
                let bytes = UnsafeRawBufferPointer(rebasing: scratch[..<count])
                let actions = fromClient ? inspector.clientBytes(bytes) : inspector.serverBytes(bytes)
                guard perform(actions) else { return }
            case .wouldBlock:
                return updateReading()
            case .eof:
                stream.pauseReading()
                guard perform(fromClient ? inspector.clientEOF() : inspector.serverEOF()) else { return }
                return
            case .error:
                return fail(fromClient ? .clientReset : .upstreamReset)
            }
        }
        updateReading()
    }

    /// Carries out the inspector's actions; false once the inspection is over.
    private func perform(_ actions: [TLSInspectorAction]) -> Bool {
        for action in actions {
            guard decided != nil else { return false }
            switch action {
            case .toServer(let bytes):
                bytesUp += UInt64(bytes.count)
                toUpstream.enqueue(bytes)
            case .toClient(let bytes):
                bytesDown += UInt64(bytes.count)
                toClient.enqueue(bytes)
            case .startTimer:
                timer?.cancel()
                timer = loop.scheduleTimer(after: settings.timeout) { [unowned self] in
                    timer = nil
                    guard decided != nil else { return }
                    _ = perform(inspector.timedOut())
                }
            case .finished:
                finish(.relay(toUpstream: toUpstream.takeUnsent(), toClient: toClient.takeUnsent()), closing: false)
                return false
            case .refuse(let reason, let detail, let alert):
                if let alert { toClient.enqueue(alert) }
                finish(.refused(reason, detail: detail), closing: true)
                return false
            }
        }
        return decided != nil
    }

    /// Reads a side only while what it sends can be queued for the other.
    private func updateReading() {
        guard decided != nil else { return }
        if toUpstream.pendingBytes > Self.highWater { client.pauseReading() } else { client.resumeReading() }
        if toClient.pendingBytes > Self.highWater { upstream.pauseReading() } else { upstream.resumeReading() }
    }

    private func fail(_ reason: ReasonCode) {
        finish(.failed(reason), closing: true)
    }

    private func finish(_ outcome: Outcome, closing: Bool) {
        guard let decided else { return }
        self.decided = nil
        timer?.cancel()
        timer = nil
        toClient.onError = nil
        toClient.onDrained = nil
        toUpstream.onError = nil
        toUpstream.onDrained = nil
        client.pauseReading()
        upstream.pauseReading()
        if closing {
            // The alert is a handful of bytes the kernel takes at once; a FIN after it lets the
            // client read it rather than a reset.
            client.shutdownWrite()
            client.close()
            upstream.close()
        }
        decided(outcome)
    }
}
