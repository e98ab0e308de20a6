import Glibc

/// Nonblocking connect with a deadline.
public enum TCPConnector {
    /// Connects to `address`; call on `loop`. `completion` runs exactly once there, never
    /// before this returns: the connected fd (ownership passes to the caller) or the failure
    /// (ETIMEDOUT when the deadline passed).
    public static func connect(to address: SocketAddress, on loop: EventLoop, timeout: Duration,
                               completion: @escaping (Result<Int32, IOError>) -> Void) -> ConnectAttempt {
        loop.preconditionInLoop()
        let attempt = ConnectAttempt(loop: loop, completion: completion)
        attempt.begin(address, timeout: timeout)
        return attempt
    }
}

/// One connect in flight. Loop-confined: touched only on `loop`'s thread, hence
/// `@exclusivity(unchecked)` on its state (see EventLoop).
public final class ConnectAttempt {
    private let loop: EventLoop
    @exclusivity(unchecked) private var completion: ((Result<Int32, IOError>) -> Void)?
    @exclusivity(unchecked) private var fd: Int32 = -1
    @exclusivity(unchecked) private var registration: IORegistration?
    @exclusivity(unchecked) private var timer: LoopTimer?

    init(loop: EventLoop, completion: @escaping (Result<Int32, IOError>) -> Void) {
        self.loop = loop
        self.completion = completion
    }

    /// Abandons the attempt: the half-open socket is closed and `completion` never runs.
    /// Call on the loop.
    public func cancel() {
        loop.preconditionInLoop()
        completion = nil
        teardown(handOver: false)
    }

    func begin(_ address: SocketAddress, timeout: Duration) {
        do throws(IOError) {
            fd = try SocketOptions.streamSocket(family: address.family)
        } catch {
            return finishLater(.failure(error))
        }
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 {
            return finishLater(.success(fd))
        }
        // Interrupted, a connect goes on in the background as if in progress (calling it
        // again would fail with EALREADY): both end in writability.
        guard errno == EINPROGRESS || errno == EINTR else {
            return finishLater(.failure(IOError("connect \(address)", errno: errno)))
        }
        let registration = loop.register(fd)
        registration.onWritable = { [self] in connected(address) }
        registration.armWriteOnce()
        self.registration = registration
        timer = loop.scheduleTimer(after: timeout) { [self] in
            finish(.failure(IOError("connect \(address)", errno: ETIMEDOUT)))
        }
    }

    /// An outcome known inside `begin` is delivered from a fresh loop turn, so the caller
    /// always holds the attempt before its completion runs.
    private func finishLater(_ result: Result<Int32, IOError>) {
        let attempt = LoopBound(self, on: loop)
        loop.execute { attempt.value.finish(result) }
    }

    private func connected(_ address: SocketAddress) {
        // Linux reports a failed connect with EPOLLERR: a clean EPOLLOUT is a connection,
        // and only a failure needs SO_ERROR (which also clears it) for its errno.
        guard registration?.reportedFailure == true else {
            return finish(.success(fd))
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
        if code == 0 {
            finish(.success(fd))
        } else {
            finish(.failure(IOError("connect \(address)", errno: code)))
        }
    }

    private func finish(_ result: Result<Int32, IOError>) {
        guard let completion else {
            return teardown(handOver: false)
        }
        self.completion = nil
        if case .success = result {
            teardown(handOver: true)
        } else {
            teardown(handOver: false)
        }
        completion(result)
    }

    private func teardown(handOver: Bool) {
        timer?.cancel()
        timer = nil
        // A socket handed over keeps its disabled epoll entry for its next registration.
        registration?.deregister(fdClosing: !handOver)
        registration = nil
        if !handOver && fd >= 0 {
            close(fd)
        }
        fd = -1
    }
}
