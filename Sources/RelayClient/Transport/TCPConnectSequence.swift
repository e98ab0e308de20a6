import Glibc
import RelayIO

/// One `TCPClientStream.connect`: resolve the name off the loop, then try each address in
/// order, all under one deadline. Loop-confined: every step runs on `loop`, so a late
/// resolution or connect after the deadline, a cancellation or a failure finds the state
/// settled and only releases what it brought.
final class TCPConnectSequence {
    private enum Phase {
        case idle
        case resolving
        case connecting(ConnectAttempt, remaining: ArraySlice<SocketAddress>)
        case finished
    }

    private let host: String
    private let port: UInt16
    private let options: ClientTransportOptions
    private let resolver: Resolver
    private let loop: EventLoop
    private var phase = Phase.idle
    private var resume: ResumeOnce<TCPClientStream>?
    private var deadlineTimer: LoopTimer?
    private var deadline: ContinuousClock.Instant
    private var cancelledEarly = false
    /// The last address's failure, reported when none answers.
    private var lastFailure: RelayClientError?

    init(host: String, port: UInt16, options: ClientTransportOptions, resolver: Resolver, loop: EventLoop) {
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.options = options
        self.resolver = resolver
        self.loop = loop
        deadline = ContinuousClock.now + options.connectTimeout
    }

    private var target: String { "\(host):\(port)" }

    func start(_ resume: ResumeOnce<TCPClientStream>, handle: LoopBound<TCPConnectSequence>) {
        guard !cancelledEarly else { return resume.fail(.cancelledTask) }
        self.resume = resume
        deadline = ContinuousClock.now + options.connectTimeout
        deadlineTimer = loop.scheduleTimer(after: options.connectTimeout) { [weak self] in self?.deadlinePassed() }
        if let literal = SocketAddress(ip: host, port: port) {
            return tryNext([literal][...])
        }
        phase = .resolving
        let loop = self.loop
        resolver.resolve(host: host, port: port) { result in
            loop.execute { handle.value.resolved(result) }
        }
    }

    func cancel() {
        guard resume != nil else {
            cancelledEarly = true
            return
        }
        finish(.failure(.cancelledTask))
    }

    private func resolved(_ result: Result<[SocketAddress], IOError>) {
        guard case .resolving = phase else { return }
        switch result {
        case .success(let addresses):
            tryNext(addresses[...])
        case .failure(let error):
            finish(.failure(RelayClientError(.hostNotFound, "resolve \(host): \(error.operation)", errno: error.errno)))
        }
    }

    private func tryNext(_ addresses: ArraySlice<SocketAddress>) {
        guard let address = addresses.first else {
            return finish(.failure(lastFailure ?? RelayClientError(.hostNotFound, "\(host) has no address")))
        }
        let remaining = addresses.dropFirst()
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return deadlinePassed() }
        let attempt = TCPConnector.connect(to: address, on: loop, timeout: left) { [weak self] result in
            self?.attemptEnded(result, address: address, remaining: remaining)
        }
        // The completion never runs before `connect` returns, so the phase is set first.
        phase = .connecting(attempt, remaining: remaining)
    }

    private func attemptEnded(_ result: Result<Int32, IOError>, address: SocketAddress,
                              remaining: ArraySlice<SocketAddress>) {
        guard case .connecting = phase else {
            if case .success(let fd) = result { close(fd) }
            return
        }
        switch result {
        case .success(let fd):
            let socket = StreamSocket(fd: fd, loop: loop)
            socket.tuneForRelay()
            let core = TCPStreamCore(socket: socket, idleTimeout: options.idleTimeout)
            finish(.success(TCPClientStream(core: LoopBound(core, on: loop), remoteAddress: address)))
        case .failure(let error):
            lastFailure = RelayClientError(error, doing: "connect to \(target) at \(address)")
            tryNext(remaining)
        }
    }

    private func deadlinePassed() {
        finish(.failure(RelayClientError(.timeout, "connect to \(target): no answer within \(options.connectTimeout)",
                                         errno: ETIMEDOUT)))
    }

    private func finish(_ result: Result<TCPClientStream, RelayClientError>) {
        if case .finished = phase {
            if case .success(let stream) = result { stream.close() }
            return
        }
        if case .connecting(let attempt, _) = phase { attempt.cancel() }
        phase = .finished
        deadlineTimer?.cancel()
        deadlineTimer = nil
        resume?.resume(result)
        resume = nil
    }
}
