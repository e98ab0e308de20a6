import RelayCore
import RelayIO

/// The relay's own TLS handshake with an app server over a freshly connected socket, run
/// on the connection's loop: non-blocking steps, each waiting for the direction OpenSSL
/// asks for, under a deadline, so a server that accepts the TCP connection and then stays
/// silent costs no more than one that never answers the connect.
///
/// It ends exactly once: with a `TLSStream` that owns the socket from then on, or a failure
/// after which the socket is closed. `cancel()` closes the socket and reports nothing.
/// Loop-confined, like the socket.
final class UpstreamTLSHandshake {
    /// How the handshake ended.
    enum Outcome {
        case established(TLSStream)
        case failed(TLSFailure)
        /// No handshake within the deadline.
        case timedOut
    }

    private let socket: StreamSocket
    private let connection: TLSConnection?
    private var timer: LoopTimer?
    private var completion: ((Outcome) -> Void)?

    /// Starts the handshake on `socket` (connected, owned from now on) as a client of
    /// `server` (a name, sent as SNI, or an address without brackets; the certificate must
    /// carry it) under `context`. `completion` runs once on the loop, never inside this call.
    init(socket: StreamSocket, context: TLSContext, server: String, port: UInt16, timeout: Duration,
         completion: @escaping (Outcome) -> Void) {
        self.socket = socket
        self.completion = completion
        let loop = socket.loop
        do {
            connection = try TLSConnection(fd: socket.fd, context: context, role: .client(host: server, port: port))
        } catch {
            connection = nil
            let failure = TLSFailure(.other, detail: "cannot set up TLS: \(error)")
            let handshake = LoopBound(self, on: loop)
            loop.execute { handshake.value.finish(.failed(failure)) }
            return
        }
        timer = loop.scheduleTimer(after: timeout) { [weak self] in self?.finish(.timedOut) }
        let handshake = LoopBound(self, on: loop)
        // A step later, not now: the caller stores this handshake before any outcome arrives.
        loop.execute { handshake.value.step() }
    }

    /// Abandons the handshake: the socket is closed and the completion never runs.
    func cancel() {
        guard completion != nil else { return }
        completion = nil
        timer?.cancel()
        timer = nil
        connection?.free()
        socket.close()
    }

    private func step() {
        guard completion != nil, let connection else { return }
        switch connection.stepHandshake(over: socket, next: { [weak self] in self?.step() }) {
        case .done:
            finish(.established(TLSStream(socket: socket, connection: connection)))
        case .waiting:
            break
        case .failed(let failure):
            finish(.failed(failure))
        }
    }

    private func finish(_ outcome: Outcome) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        if case .established = outcome {} else {
            connection?.free()
            socket.close()
        }
        completion(outcome)
    }
}
