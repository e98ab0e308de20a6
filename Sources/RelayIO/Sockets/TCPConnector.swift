import Dispatch
import Glibc

/// Nonblocking connect with a deadline.
public enum TCPConnector {
    /// Connects to `address`; `completion` runs exactly once on `loop`: the connected fd
    /// (ownership passes to the caller) or the failure (ETIMEDOUT when the deadline passed).
    public static func connect(to address: SocketAddress, on loop: EventLoop, timeout: Duration,
                               completion: @escaping @Sendable (Result<Int32, IOError>) -> Void) -> ConnectAttempt {
        let attempt = ConnectAttempt(loop: loop, completion: completion)
        loop.execute { attempt.begin(address, timeout: timeout) }
        return attempt
    }
}

/// One connect in flight. Loop-confined: touched only on `loop.queue`.
public final class ConnectAttempt: @unchecked Sendable {
    private let loop: EventLoop
    private var completion: (@Sendable (Result<Int32, IOError>) -> Void)?
    private var fd: Int32 = -1
    private var source: DispatchSourceWrite?
    private var timer: LoopTimer?
    /// Whether the fd goes to the caller (success) or is closed (failure, cancel).
    private var handOver = false
    /// A success waiting for the write source's cancel handler: libdispatch still has the
    /// fd registered until then, and a caller that closed it at once would leave that
    /// registration on the number, so the next socket to reuse it would never get an event.
    private var pendingHandOver: (@Sendable (Result<Int32, IOError>) -> Void)?

    init(loop: EventLoop, completion: @escaping @Sendable (Result<Int32, IOError>) -> Void) {
        self.loop = loop
        self.completion = completion
    }

    /// Abandons the attempt: the half-open socket is closed and `completion` never runs.
    /// Call on the loop.
    public func cancel() {
        loop.preconditionInLoop()
        completion = nil
        pendingHandOver = nil
        teardown()
    }

    func begin(_ address: SocketAddress, timeout: Duration) {
        guard completion != nil else { return }
        do {
            fd = try SocketOptions.streamSocket(family: address.family)
        } catch let error as IOError {
            return finish(.failure(error))
        } catch {
            return finish(.failure(IOError("socket", errno: EIO)))
        }
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 {
            return finish(.success(fd))
        }
        guard errno == EINPROGRESS || errno == EINTR else {
            return finish(.failure(IOError("connect \(address)", errno: errno)))
        }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
        source.setEventHandler { [self] in connected(address) }
        let socketFD = fd
        source.setCancelHandler { [self] in
            if handOver, let deliver = pendingHandOver {
                pendingHandOver = nil
                deliver(.success(socketFD))
            } else {
                close(socketFD)
            }
        }
        self.source = source
        source.resume()
        timer = loop.scheduleTimer(after: timeout) { [self] in
            finish(.failure(IOError("connect \(address)", errno: ETIMEDOUT)))
        }
    }

    private func connected(_ address: SocketAddress) {
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
            return teardown()
        }
        self.completion = nil
        if case .success = result {
            handOver = true
            if source != nil {
                // Delivered by the source's cancel handler, once the fd is unregistered.
                pendingHandOver = completion
                return teardown()
            }
        }
        teardown()
        completion(result)
    }

    private func teardown() {
        timer?.cancel()
        timer = nil
        if let source {
            source.cancel()
            self.source = nil
        } else if !handOver && fd >= 0 {
            close(fd)
        }
        fd = -1
    }
}
