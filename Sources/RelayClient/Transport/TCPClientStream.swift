import RelayIO
import Synchronization

/// A plain TCP connection of the client library, driven by one loop of a
/// `RelayClientRuntime`: its calls suspend the caller's task, never block its thread.
public final class TCPClientStream: ClientByteStream {
    /// The loop the socket belongs to.
    public let loop: EventLoop
    /// The address connected to.
    public let remoteAddress: SocketAddress
    private let core: LoopBound<TCPStreamCore>
    private let closed = Atomic<Bool>(false)

    init(core: LoopBound<TCPStreamCore>, remoteAddress: SocketAddress) {
        self.loop = core.loop
        self.core = core
        self.remoteAddress = remoteAddress
    }

    deinit {
        end(.closedOnRelease)
    }

    /// Connects to `host` (a name, or an IPv4 or IPv6 literal, brackets allowed) on `port`:
    /// the name is resolved off the loops, and each address is tried in the resolver's order
    /// (IPv6 and IPv4) until one answers, all within `options.connectTimeout`.
    public static func connect(host: String, port: UInt16, options: ClientTransportOptions = ClientTransportOptions(),
                               runtime: RelayClientRuntime = .shared) async throws(RelayClientError) -> TCPClientStream {
        let loop = runtime.nextLoop()
        let sequence = LoopBound(sending: TCPConnectSequence(host: host, port: port, options: options,
                                                             resolver: runtime.resolver, loop: loop), on: loop)
        return try await suspend(onCancel: { loop.execute { sequence.value.cancel() } }) { (resume: ResumeOnce<TCPClientStream>) in
            loop.execute { sequence.value.start(resume, handle: sequence) }
        }
    }

    public func read(maxBytes: Int) async throws(RelayClientError) -> [UInt8] {
        let core = self.core
        return try await suspend(onCancel: { [self] in end(.cancelledTask) }) { (resume: ResumeOnce<[UInt8]>) in
            loop.execute { core.value.read(maxBytes: maxBytes, resume) }
        }
    }

    public func write(_ bytes: [UInt8]) async throws(RelayClientError) {
        let core = self.core
        try await suspend(onCancel: { [self] in end(.cancelledTask) }) { (resume: ResumeOnce<Void>) in
            loop.execute { core.value.write(bytes, resume) }
        }
    }

    public func shutdownWrite() async throws(RelayClientError) {
        let core = self.core
        try await suspend(onCancel: { [self] in end(.cancelledTask) }) { (resume: ResumeOnce<Void>) in
            loop.execute { core.value.shutdownWrite(resume) }
        }
    }

    public func close() {
        end(.closedStream)
    }

    private func end(_ reason: RelayClientError) {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        let core = self.core
        if loop.inLoop {
            core.value.end(reason)
        } else {
            loop.execute { core.value.end(reason) }
        }
    }
}
