import Glibc
import RelayCore
import RelayIO

/// The server handshake of a connection accepted on an HTTPS listener, run step by step on
/// the loop that accepted it and bounded by the header timeout (a client that connects and
/// says nothing costs what a silent plain client costs). Done, it hands a `TLSStream` to a
/// `ClientConnection`; failed, the connection is refused before any request: counted with
/// its source's other such refusals (`RefusalTally`, whose row keeps the first failure's
/// OpenSSL detail) and closed. Plaintext sent to the port gets only the close: an HTTP
/// answer would be readable to it, but would also be written into a stream a confused TLS
/// client then fails to parse, and nginx's "plain HTTP to HTTPS port" page is a courtesy
/// no proxy client acts on.
///
/// Loop-confined: touched only on its loop's thread, so not `Sendable`.
final class ClientTLSHandshake: IdleTracked {
    private let context: LoopContext
    private let socket: StreamSocket
    private let connection: TLSConnection
    private var identity: SessionIdentity
    private var timer: LoopTimer?
    private var done = false
    private(set) var lastActivity = monotonicNanos()

    /// Takes `fd` over; `tls` is the listener's current server context.
    init(context: LoopContext, fd: Int32, identity: SessionIdentity, tls: TLSContext) throws(TLSSetupError) {
        self.context = context
        self.identity = identity
        socket = StreamSocket(fd: fd, loop: context.loop)
        do {
            connection = try TLSConnection(fd: fd, context: tls, role: .server)
        } catch {
            socket.close()
            throw error
        }
    }

    /// Starts the handshake; the client speaks first.
    func start() {
        socket.tuneForRelay()
        context.track(self)
        timer = context.loop.scheduleTimer(after: context.shared.settings.timeouts.header) { [self] in
            timer = nil
            refuse(.headerTimeout, detail: "the TLS handshake did not finish within the header timeout")
        }
        step()
    }

    // MARK: IdleTracked

    func idleTimedOut() {
        refuse(.idleTimeout, detail: "the TLS handshake went idle")
    }

    var stalledSince: UInt64? { nil }

    func stallTimedOut() {}

    func abortForShutdown() {
        refuse(.shutdown, detail: "the relay is stopping")
    }

    // MARK: Steps

    private func step() {
        guard !done else { return }
        lastActivity = monotonicNanos()
        switch connection.stepHandshake(over: socket, next: { [self] in step() }) {
        case .done:
            established()
        case .waiting:
            break
        case .failed(let failure):
            refuse(failure.reason(asUpstream: false), detail: failure.detail)
        }
    }

    private func established() {
        end()
        identity.clientTLSVersion = connection.auditVersion
        identity.clientTLSCipher = connection.cipherName
        let stream = TLSStream(socket: socket, connection: connection)
        ClientConnection(context: context, client: stream, tls: connection, identity: identity).start()
    }

    /// Counts the refusal, logs its detail and closes; the connection no longer counts.
    private func refuse(_ reason: ReasonCode, detail: String) {
        guard !done else { return }
        end()
        let shared = context.shared
        shared.logger.log(.info, "tls-refused session=\(identity.session) client=\(identity.client) "
                          + "listener=\(identity.listener) reason=\(reason.rawValue) detail=\(RelayLog.quoted(detail))")
        if let source = identity.source {
            shared.refusals.count(reason, status: nil, source: source, listener: identity.listener, detail: detail)
        }
        connection.free()
        socket.close()
        shared.connectionClosed(identity)
    }

    private func end() {
        done = true
        timer?.cancel()
        timer = nil
        context.untrack(self)
    }
}
