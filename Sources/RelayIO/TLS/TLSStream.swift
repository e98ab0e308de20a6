import Glibc

/// A `RelayStream` carrying TLS: a `TLSConnection` over a `StreamSocket` whose handshake is
/// done. What a proxy connection, tunnel inspection and forwarding write against a plain
/// socket works on it unchanged; each TLS step that needs the other direction of the socket
/// (a read that must write first, a write that must read first) waits for that direction here.
///
/// Loop-confined: made and touched only on its socket's loop.
public final class TLSStream: RelayStream {
    public let socket: StreamSocket
    public let connection: TLSConnection
    private var onReadable: (() -> Void)?
    private var reading = false
    private var onWritable: (() -> Void)?
    /// The last read returned `.wantWrite`: it is retried once the socket is writable.
    private var readWaitsForWritable = false
    /// The last write returned `.wantRead`: it is retried once the socket is readable.
    private var writeWaitsForReadable = false
    private var closed = false
    /// Why the stream failed, for the log (the relay sees an `IOError`).
    public private(set) var failure: TLSFailure?

    /// Takes `socket` and `connection` (handshake complete) over.
    public init(socket: StreamSocket, connection: TLSConnection) {
        self.socket = socket
        self.connection = connection
    }

    public var loop: EventLoop { socket.loop }

    public func startReading(_ onReadable: @escaping () -> Void) {
        self.onReadable = onReadable
        reading = true
        updateSocketReading()
        comeBackForBufferedInput()
    }

    public func pauseReading() {
        reading = false
        updateSocketReading()
    }

    public func resumeReading() {
        guard !reading, onReadable != nil, !closed else { return }
        reading = true
        updateSocketReading()
        comeBackForBufferedInput()
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        switch connection.read(into: buffer) {
        case .bytes(let count): return .bytes(count)
        case .wantRead: return .wouldBlock
        case .wantWrite:
            readWaitsForWritable = true
            socket.whenWritable { [weak self] in self?.socketWritable() }
            return .wouldBlock
        case .closed: return .eof
        case .eof:
            // A server's TCP EOF without close_notify may be a cut, not an end: a response
            // delimited by the close must not pass as whole, so the relay's own TLS to an app
            // server reads it as a failure. A client that skips close_notify only ends.
            guard case .client = connection.role else { return .eof }
            return .error(IOError("tls read (the server closed without close_notify)", errno: ECONNRESET))
        case .failed(let failure):
            self.failure = failure
            return .error(IOError("tls read", errno: ECONNRESET))
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(IOError) -> Int {
        switch connection.write(bytes) {
        case .wrote(let count): return count
        case .wantWrite: return 0
        case .wantRead:
            writeWaitsForReadable = true
            updateSocketReading()
            return 0
        case .failed(let failure):
            self.failure = failure
            throw IOError("tls write", errno: EPIPE)
        }
    }

    public func whenWritable(_ onWritable: @escaping () -> Void) {
        guard !closed else { return }
        self.onWritable = onWritable
        if writeWaitsForReadable {
            updateSocketReading()
        } else {
            socket.whenWritable { [weak self] in self?.socketWritable() }
        }
    }

    /// close_notify: the TLS way to end the sending direction; reading goes on.
    public func shutdownWrite() {
        connection.shutdown()
    }

    public func setLinger0() {
        socket.setLinger0()
    }

    public func close() {
        guard !closed else { return }
        closed = true
        onReadable = nil
        onWritable = nil
        connection.free()
        socket.close()
    }

    // MARK: Socket events

    private func socketReadable() {
        if writeWaitsForReadable {
            writeWaitsForReadable = false
            updateSocketReading()
            fireWritable()
        }
        if reading, let onReadable {
            onReadable()
            comeBackForBufferedInput()
        }
    }

    private func socketWritable() {
        if readWaitsForWritable {
            readWaitsForWritable = false
            if reading, let onReadable {
                onReadable()
                comeBackForBufferedInput()
            }
        }
        if !writeWaitsForReadable {
            fireWritable()
        }
    }

    private func fireWritable() {
        guard let callback = onWritable else { return }
        onWritable = nil
        callback()
    }

    /// The socket is watched for reads while the owner reads or a write waits for a read.
    private func updateSocketReading() {
        guard !closed else { return }
        if reading || writeWaitsForReadable {
            socket.startReading { [weak self] in self?.socketReadable() }
        } else {
            socket.pauseReading()
        }
    }

    /// A reader that stopped before `.wouldBlock` (its per-event budget) leaves decrypted
    /// input in OpenSSL that epoll will not announce: it gets another turn on the loop.
    private func comeBackForBufferedInput() {
        guard reading, !closed, connection.hasBufferedInput else { return }
        let stream = LoopBound(self, on: loop)
        loop.execute {
            let stream = stream.value
            guard stream.reading, !stream.closed, stream.connection.hasBufferedInput else { return }
            stream.socketReadable()
        }
    }
}
