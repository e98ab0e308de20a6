import RelayCore
import RelayIO
import Synchronization

/// TLS over any `ClientByteStream`: OpenSSL works on memory buffers and this layer moves the
/// records through the stream below, so the same code runs TLS over a TCP connection and
/// TLS inside a tunnel that is itself TLS (an app server's end-to-end TLS through an
/// `https://` relay).
///
/// The certificate chain and the host name (or address) are verified unless the options
/// say `verify: false`; SNI goes out for names only. One read and one write may run at once.
public final class TLSClientStream: ClientByteStream {
    /// The stream the records travel on; closed with this one.
    public let inner: any ClientByteStream
    private let engine: TLSRecordEngine
    /// Orders the records the reading and the writing tasks hand to `inner`.
    private let sendGate = AsyncSerialGate()
    private let reading = Atomic<Bool>(false)
    private let writing = Atomic<Bool>(false)
    private let target: String

    /// The largest ciphertext moved in one step: a record and its header.
    static let recordChunk = 16 * 1024 + 512
    /// The most cleartext handed to OpenSSL at once: one record, so a large write never
    /// turns into more than a record of ciphertext waiting in memory.
    static let cleartextChunk = 16 * 1024

    private init(inner: any ClientByteStream, engine: TLSRecordEngine, target: String) {
        self.inner = inner
        self.engine = engine
        self.target = target
    }

    /// Runs the TLS handshake with `host` over `inner` and returns the stream once it is
    /// done, within `options.tlsHandshakeTimeout`. `host` is what the certificate must name
    /// (and the SNI, unless it is an address); `port` keys the session cache, so a second
    /// connection to the same server resumes. On failure `inner` is closed.
    public static func connect(over inner: any ClientByteStream, host: String, port: UInt16, tls: ClientTLSOptions,
                               options: ClientTransportOptions = ClientTransportOptions(),
                               runtime: RelayClientRuntime = .shared) async throws(RelayClientError) -> TLSClientStream {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let stream: TLSClientStream
        do throws(RelayClientError) {
            let context = try runtime.tlsContexts.context(for: tls)
            let connection: TLSConnection
            do throws(TLSSetupError) {
                connection = try TLSConnection(memoryTransportWith: context, role: .client(host: name, port: port))
            } catch {
                throw RelayClientError(error)
            }
            stream = TLSClientStream(inner: inner, engine: TLSRecordEngine(connection), target: "\(name):\(port)")
        } catch {
            inner.close()
            throw error
        }
        try await stream.handshake(timeout: options.tlsHandshakeTimeout)
        return stream
    }

    /// The negotiated version.
    public var negotiatedVersion: TLSVersion? { engine.withConnection { $0.protocolWireVersion }.flatMap(TLSVersion.init(wire:)) }
    /// The negotiated cipher suite, by OpenSSL's name.
    public var cipherName: String? { engine.withConnection { $0.cipherName } }
    /// The handshake resumed a cached TLS session instead of running a full handshake.
    public var sessionReused: Bool { engine.withConnection { $0.sessionReused } }

    // MARK: Handshake

    private func handshake(timeout: Duration) async throws(RelayClientError) {
        let inner = self.inner
        // Closing the stream below ends whatever step the handshake waits in.
        let watchdog = Task { () -> Bool in
            do {
                try await Task.sleep(for: timeout)
            } catch {
                return false
            }
            inner.close()
            return true
        }
        let outcome: Result<Void, RelayClientError>
        do throws(RelayClientError) {
            try await withCancellationClosing { () async throws(RelayClientError) in
                while true {
                    let step = engine.withConnection { $0.handshake() }
                    try await sendPending()
                    switch step {
                    case .done: return
                    case .wantRead, .wantWrite: try await receiveRecords()
                    case .failed(let failure):
                        throw RelayClientError(failure, doing: "TLS handshake with \(target)")
                    }
                }
            }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        watchdog.cancel()
        if await watchdog.value {
            throw RelayClientError(.timeout, "TLS handshake with \(target): not done within \(timeout)")
        }
        if case .failure(let error) = outcome {
            inner.close()
            throw error
        }
    }

    // MARK: ClientByteStream

    public func read(maxBytes: Int) async throws(RelayClientError) -> [UInt8] {
        guard !reading.exchange(true, ordering: .acquiring) else {
            throw RelayClientError(.concurrentOperation, "a read is already pending on this stream")
        }
        defer { reading.store(false, ordering: .releasing) }
        return try await withCancellationClosing { () async throws(RelayClientError) -> [UInt8] in
            while true {
                let step = try engine.read(maxBytes: maxBytes)
                // Reading may have produced records to send (a key update's answer).
                try await sendPending()
                switch step {
                case .bytes(let bytes): return bytes
                case .end: return []
                case .cut:
                    throw RelayClientError(.connectionReset, "read from \(target): the server closed without close_notify")
                case .needsInput: try await receiveRecords()
                case .failed(let failure):
                    throw RelayClientError(failure, doing: "TLS read from \(target)")
                }
            }
        }
    }

    public func write(_ bytes: [UInt8]) async throws(RelayClientError) {
        guard !writing.exchange(true, ordering: .acquiring) else {
            throw RelayClientError(.concurrentOperation, "a write is already pending on this stream")
        }
        defer { writing.store(false, ordering: .releasing) }
        try await withCancellationClosing { () async throws(RelayClientError) in
            await sendGate.enter()
            defer { sendGate.leave() }
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + Self.cleartextChunk)
                offset += try engine.write(bytes[offset..<end])
                try await sendTaken()
            }
        }
        // Records the reading task produced while this write held the gate.
        try await sendPending()
    }

    public func shutdownWrite() async throws(RelayClientError) {
        try await withCancellationClosing { () async throws(RelayClientError) in
            await sendGate.enter()
            defer { sendGate.leave() }
            try engine.sendCloseNotify()
            try await sendTaken()
            try await inner.shutdownWrite()
        }
    }


    public func close() {
        engine.end(.closedStream)
        inner.close()
    }

    // MARK: Moving records

    /// One read from `inner` into OpenSSL; its end, too.
    private func receiveRecords() async throws(RelayClientError) {
        let records = try await inner.read(maxBytes: Self.recordChunk)
        engine.receive(records)
    }

    /// Sends what OpenSSL wrote, if anything, unless the writing task holds the gate: it
    /// sends whatever is pending before it lets go, and looks again after. The reading task
    /// never waits for the gate, since a writer blocked on a peer that waits for this side
    /// to read would then never be unblocked.
    private func sendPending() async throws(RelayClientError) {
        while engine.hasPendingRecords {
            guard sendGate.tryEnter() else { return }
            defer { sendGate.leave() }
            try await sendTaken()
        }
    }

    /// Sends what OpenSSL wrote; the caller holds `sendGate`.
    private func sendTaken() async throws(RelayClientError) {
        while true {
            let records = try engine.takeRecords(maxBytes: Self.recordChunk)
            if records.isEmpty { return }
            try await inner.write(records)
        }
    }

    /// Runs `body`; cancelling the task closes the stream, and the call throws `cancelled`.
    private func withCancellationClosing<T: Sendable>(
        _ body: () async throws(RelayClientError) -> T
    ) async throws(RelayClientError) -> T {
        let engine = self.engine, inner = self.inner
        let result: Result<T, RelayClientError> = await withTaskCancellationHandler {
            do throws(RelayClientError) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        } onCancel: {
            engine.end(.cancelledTask)
            inner.close()
        }
        if case .failure = result, let ended = engine.endReason { throw ended }
        return try result.get()
    }
}
