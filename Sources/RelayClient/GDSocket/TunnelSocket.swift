import Dispatch
import Synchronization

/// A GDSocket-style socket over `RelayTunnel`, for apps written against GDSocket's shape:
/// set a `delegate`, `connect()`, fill `writeStream` and `write()` it once `onOpen` came,
/// drain `readStream` in `onRead`, `disconnect()` when done.
///
/// Callbacks run on the queue given at creation (a private serial queue by default), one at
/// a time, in order; `onClose` or `onErr` is the last. Writes go out in the order of the
/// `write()` calls.
public final class TunnelSocket: Sendable {
    /// The host the socket connects to.
    public let host: String
    /// The port the socket connects to.
    public let port: UInt16
    /// The tunnel underneath, for its state and relay.
    public let tunnel: RelayTunnel
    /// Bytes the server sent, waiting for the app.
    public let readStream = TunnelSocketBuffer()
    /// Bytes the app filled in, sent by `write()`.
    public let writeStream = TunnelSocketBuffer()

    private struct Life {
        weak var delegate: (any TunnelSocketDelegate)?
        var started = false
        var ended = false
        var opened = false
        var reader: Task<Void, Never>?
        /// Bytes of `write()` calls not yet handed to the tunnel, in order.
        var outbound: [[UInt8]] = []
        /// A writing task is draining `outbound`; it ends when `outbound` is empty, so an
        /// idle socket holds no task for writing.
        var writing = false
    }

    private let life = Mutex(Life())
    private let queue: DispatchQueue
    /// The most of the server's bytes kept in `readStream` before the socket stops reading
    /// until the app drains it.
    static let readStreamLimit = 256 * 1024

    /// A socket to `host:port` through the relays and with the TLS of `options`; callbacks
    /// on `queue`, or a private serial queue.
    public init(host: String, port: UInt16, options: RelayTunnelOptions, queue: DispatchQueue? = nil) {
        self.host = host
        self.port = port
        self.tunnel = RelayTunnel(options: options)
        // The private queue targets the default global queue, not the overcommitting one a
        // queue gets by default: libdispatch on Linux starts a thread for each overcommit
        // queue with work while the others are busy, so a thousand sockets opening at once
        // would start a couple of hundred threads.
        self.queue = queue ?? DispatchQueue(label: "dynrelay.TunnelSocket", target: .global())
    }

    /// Told of the socket's events; held weakly, as GDSocket does.
    public var delegate: (any TunnelSocketDelegate)? {
        get { life.withLock { $0.delegate } }
        set { life.withLock { $0.delegate = newValue } }
    }

    /// The tunnel's state.
    public var state: RelayTunnelState { tunnel.state }

    /// Opens the tunnel in the background: `onOpen` or `onErr` follows. Call once.
    public func connect() {
        let first = life.withLock { life -> Bool in
            defer { life.started = true }
            return !life.started
        }
        guard first else {
            deliver(.error(RelayClientError(.invalidState, "connect() called twice")))
            return
        }
        let opener = Task { [self] in
            do throws(RelayClientError) {
                try await tunnel.connect(host: host, port: port)
            } catch {
                // A disconnect() while connecting is a close, not a failure.
                deliver(error.code == .closed ? .close : .error(error))
                return
            }
            let pending = life.withLock { life -> Bool in
                life.opened = true
                return startsWriter(&life)
            }
            if pending { drainOutbound() }
            deliver(.open)
            // Reading gets a task of its own, and this one ends: a task keeps the stack
            // memory its deepest call needed (the open: relay choice, CONNECT, TLS) for as
            // long as it lives, and an idle socket should hold only what a read needs.
            let reader = Task { [self] in await readUntilEnd() }
            life.withLock { $0.reader = reader }
        }
        life.withLock { life in
            if life.reader == nil { life.reader = opener }
        }
    }

    /// Sends what `writeStream` holds now, after what earlier calls sent.
    public func write() {
        let bytes = writeStream.unreadData()
        guard !bytes.isEmpty else { return }
        let start = life.withLock { life -> Bool in
            guard !life.ended else { return false }
            life.outbound.append(bytes)
            return startsWriter(&life)
        }
        if start { drainOutbound() }
    }

    /// Closes the socket; `onClose` follows unless the socket had already ended.
    public func disconnect() {
        let reader = life.withLock { life in
            life.outbound = []
            return life.reader
        }
        Task { [self] in
            await tunnel.close()
            reader?.cancel()
            readStream.release()
            deliver(.close)
        }
    }

    /// Whether the caller must start the writing task: the tunnel is open, bytes wait and
    /// no task drains them yet.
    private func startsWriter(_ life: inout Life) -> Bool {
        guard life.opened, !life.writing, !life.outbound.isEmpty else { return false }
        life.writing = true
        return true
    }

    private func drainOutbound() {
        Task { [self] in
            while let bytes = life.withLock({ life -> [UInt8]? in
                guard !life.outbound.isEmpty else {
                    life.writing = false
                    return nil
                }
                return life.outbound.removeFirst()
            }) {
                do throws(RelayClientError) {
                    try await tunnel.write(bytes)
                } catch {
                    life.withLock { $0.outbound = [] }
                    if error.code != .closed { deliver(.error(error)) }
                    return
                }
            }
        }
    }

    private func readUntilEnd() async {
        while true {
            await readStream.waitUntilBelow(Self.readStreamLimit)
            let bytes: [UInt8]
            do throws(RelayClientError) {
                bytes = try await tunnel.read()
            } catch {
                if error.code == .closed || error.code == .cancelled {
                    deliver(.close)
                } else {
                    deliver(.error(error))
                }
                return
            }
            if bytes.isEmpty {
                // The server ended the stream: like GDSocket, the socket closes with it.
                await tunnel.close()
                deliver(.close)
                return
            }
            readStream.write(bytes)
            deliver(.read)
        }
    }

    private enum Event {
        case open, read, close
        case error(RelayClientError)
    }

    /// Queues `event` for the delegate; nothing after the first close or error.
    private func deliver(_ event: Event) {
        let delegate = life.withLock { life -> (any TunnelSocketDelegate)?? in
            if life.ended { return nil }
            switch event {
            case .close, .error: life.ended = true
            case .open, .read: break
            }
            return .some(life.delegate)
        }
        guard let delegate, let delegate else { return }
        queue.async { [self] in
            switch event {
            case .open: delegate.onOpen(self)
            case .read: delegate.onRead(self)
            case .close: delegate.onClose(self)
            case .error(let error): delegate.onErr(self, error: error)
            }
        }
    }
}
