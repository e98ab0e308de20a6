import RelayCore
import Synchronization

/// A byte stream to an app server through a relay's `CONNECT`, asynchronous and
/// state-based: `connect`, then `read` and `write` (one of each at a time), `shutdownWrite`
/// to half-close, `close`. Relays come from the options' `RelaySelector`, with failover and
/// back-off; a `407` is answered with the options' proxy credentials; TLS to the app
/// server runs end to end inside the tunnel when `serverTLS` is set.
///
/// Every wait is bounded by the options' timeouts, and cancelling a calling task closes the
/// tunnel. Errors are `RelayClientError`: a relay's refusal as `relay-refused` with its
/// status and reason code, refused credentials as `proxy-auth-failed`. An open tunnel that
/// breaks is `failed`, never re-opened behind the app's back: what was written may have
/// reached the server.
public final class RelayTunnel: Sendable {
    /// The relays, credentials, TLS and timeouts this tunnel uses.
    public let options: RelayTunnelOptions

    private struct Machine {
        var state: RelayTunnelState = .disconnected
        var stream: (any ClientByteStream)?
        /// Connections of a connect in progress, closed by `close`.
        var connecting: [any ClientByteStream] = []
        var relay: RelayEndpoint?
        var observers: [Int: AsyncStream<RelayTunnelState>.Continuation] = [:]
        var nextObserver = 0
        var handler: (@Sendable (RelayTunnelState) -> Void)?
    }

    private let machine = Mutex(Machine())

    /// A disconnected tunnel; nothing happens until `connect`.
    public init(options: RelayTunnelOptions) {
        self.options = options
    }

    deinit {
        machine.withLock { machine in
            machine.stream?.close()
            for stream in machine.connecting { stream.close() }
            for observer in machine.observers.values { observer.finish() }
        }
    }

    /// Where the tunnel is now.
    public var state: RelayTunnelState { machine.withLock { $0.state } }

    /// The relay the open tunnel goes through.
    public var relay: RelayEndpoint? { machine.withLock { $0.relay } }

    /// The TLS version negotiated with the app server, when `serverTLS` was set.
    public var serverTLSVersion: TLSVersion? {
        (machine.withLock { $0.stream } as? TLSClientStream)?.negotiatedVersion
    }

    /// The current state, then every change, ending after `closed` or `failed`.
    public func stateChanges() -> AsyncStream<RelayTunnelState> {
        let (stream, continuation) = AsyncStream.makeStream(of: RelayTunnelState.self, bufferingPolicy: .unbounded)
        let removal: Int? = machine.withLock { machine in
            continuation.yield(machine.state)
            if machine.state.isFinal {
                continuation.finish()
                return nil
            }
            let id = machine.nextObserver
            machine.nextObserver += 1
            machine.observers[id] = continuation
            return id
        }
        if let removal {
            continuation.onTermination = { [weak self] _ in
                self?.machine.withLock { _ = $0.observers.removeValue(forKey: removal) }
            }
        }
        return stream
    }

    /// Calls `handler` with each new state, on the thread that changed it (the handler must
    /// not block); nil removes it.
    public func onStateChange(_ handler: (@Sendable (RelayTunnelState) -> Void)?) {
        machine.withLock { $0.handler = handler }
    }

    /// Opens the tunnel to `host` (a name or an IP literal) on `port`, failing over between
    /// relays as `RelaySelector` says, and runs TLS to the app server inside it when the
    /// options ask for it. Call once.
    public func connect(host: String, port: UInt16) async throws(RelayClientError) {
        let started = transition(to: .connecting) { $0 == .disconnected }
        guard started else {
            throw RelayClientError(.invalidState, "connect on a tunnel that is \(state)")
        }
        let opener = TunnelOpener(host: host, port: port, options: options) { [weak self] stream in
            let keep = self?.machine.withLock { machine -> Bool in
                guard machine.state == .connecting else { return false }
                machine.connecting.append(stream)
                return true
            }
            if keep != true { stream.close() }
        }
        do throws(RelayClientError) {
            let (stream, relay) = try await opener.open()
            let opened = machine.withLock { machine -> Bool in
                machine.connecting = []
                guard machine.state == .connecting else { return false }
                machine.stream = stream
                machine.relay = relay
                return true
            }
            guard opened else {
                stream.close()
                throw RelayClientError.closedStream
            }
            transition(to: .open) { $0 == .connecting }
        } catch {
            machine.withLock { $0.connecting = [] }
            if !transition(to: .failed(error), when: { $0 == .connecting }), state == .closed || state == .closing {
                throw RelayClientError.closedStream
            }
            throw error
        }
    }

    /// Up to `maxBytes` bytes from the app server as soon as some arrive; empty once it has
    /// ended its side of the stream.
    public func read(maxBytes: Int = 64 * 1024) async throws(RelayClientError) -> [UInt8] {
        let stream = try openStream(for: "read")
        do throws(RelayClientError) {
            return try await stream.read(maxBytes: maxBytes)
        } catch {
            throw broke(error)
        }
    }

    /// Sends all of `bytes`, waiting while the app server does not read.
    public func write(_ bytes: [UInt8]) async throws(RelayClientError) {
        let stream = try openStream(for: "write")
        do throws(RelayClientError) {
            try await stream.write(bytes)
        } catch {
            throw broke(error)
        }
    }

    /// Ends this side's direction once what was written is sent (with TLS, after
    /// close_notify); the server's bytes still arrive.
    public func shutdownWrite() async throws(RelayClientError) {
        let stream = try openStream(for: "shutdownWrite")
        do throws(RelayClientError) {
            try await stream.shutdownWrite()
        } catch {
            throw broke(error)
        }
    }

    /// Closes the tunnel, or ends a connect in progress; pending calls throw `closed`.
    /// Idempotent.
    public func close() async {
        let toClose = machine.withLock { machine -> [any ClientByteStream]? in
            guard !machine.state.isFinal, machine.state != .closing else { return nil }
            return machine.connecting + (machine.stream.map { [$0] } ?? [])
        }
        guard let toClose else { return }
        transition(to: .closing) { !$0.isFinal && $0 != .closing }
        for stream in toClose { stream.close() }
        transition(to: .closed) { $0 == .closing }
    }

    private func openStream(for call: String) throws(RelayClientError) -> any ClientByteStream {
        let (state, stream) = machine.withLock { ($0.state, $0.stream) }
        switch state {
        case .open:
            if let stream { return stream }
        case .closing, .closed:
            throw RelayClientError.closedStream
        case .failed(let error):
            throw error
        case .disconnected, .connecting:
            break
        }
        throw RelayClientError(.invalidState, "\(call) on a tunnel that is \(state)")
    }

    /// An open tunnel's failure: the tunnel is `failed` unless this side closed it.
    private func broke(_ error: RelayClientError) -> RelayClientError {
        if transition(to: .failed(error), when: { $0 == .open }) { return error }
        return state == .closing || state == .closed ? RelayClientError.closedStream : error
    }

    /// Moves to `new` when `allowed` holds for the current state, then tells observers.
    @discardableResult
    private func transition(to new: RelayTunnelState, when allowed: (RelayTunnelState) -> Bool) -> Bool {
        // Observers get each state under the lock, so they see the states in the order they
        // happened; finishing runs their termination handlers, which take the lock, so it
        // waits until after.
        typealias Handler = @Sendable (RelayTunnelState) -> Void
        let notify = machine.withLock { machine -> (Handler?, [AsyncStream<RelayTunnelState>.Continuation], (any ClientByteStream)?)? in
            guard allowed(machine.state) else { return nil }
            machine.state = new
            for observer in machine.observers.values { observer.yield(new) }
            guard new.isFinal else { return (machine.handler, [], nil) }
            let ended = Array(machine.observers.values)
            machine.observers = [:]
            if case .failed = new { return (machine.handler, ended, machine.stream) }
            return (machine.handler, ended, nil)
        }
        guard let (handler, ended, broken) = notify else { return false }
        broken?.close()
        for observer in ended { observer.finish() }
        handler?(new)
        return true
    }
}
