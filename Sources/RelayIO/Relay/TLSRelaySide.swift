import CRelayShims
import Glibc

/// One end of a `TLSRelayPump`: a plain socket, or a TLS stream over one (its handshake
/// done). Reads and writes come to the same shape either way, with what each waits for.
public enum TLSRelaySide {
    case plain(Int32)
    case tls(TLSConnection)

    /// The socket of this side.
    public var fd: Int32 {
        switch self {
        case .plain(let fd): fd
        case .tls(let connection): connection.fd
        }
    }

    /// What a read or write waits for: the descriptor readable or writable. A TLS read may
    /// wait for writability (and a write for readability) while OpenSSL flushes or reads a
    /// record of its own.
    enum Wait {
        case readable
        case writable
    }

    enum Outcome {
        case moved(Int)
        case wait(Wait)
        /// The sender's stream ended: in order (close_notify or, for plain TCP, a FIN), or
        /// a TLS stream cut by a bare FIN.
        case ended(orderly: Bool)
        case failed(errno: Int32, detail: String)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        switch self {
        case .plain(let fd):
            do throws(IOError) {
                switch try systemCall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
                case .processed(0): return .ended(orderly: true)
                case .processed(let count): return .moved(count)
                case .wouldBlock: return .wait(.readable)
                }
            } catch {
                return .failed(errno: error.errno, detail: error.description)
            }
        case .tls(let connection):
            switch connection.read(into: buffer) {
            case .bytes(let count): return .moved(count)
            case .wantRead: return .wait(.readable)
            case .wantWrite: return .wait(.writable)
            case .closed: return .ended(orderly: true)
            case .eof: return .ended(orderly: false)
            case .failed(let failure): return .failed(errno: ECONNRESET, detail: failure.description)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        switch self {
        case .plain(let fd):
            do throws(IOError) {
                switch try systemCall("send", { crelay_send_nosignal(fd, bytes.baseAddress, bytes.count) }) {
                case .processed(let count): return .moved(count)
                case .wouldBlock: return .wait(.writable)
                }
            } catch {
                return .failed(errno: error.errno, detail: error.description)
            }
        case .tls(let connection):
            switch connection.write(bytes) {
            case .wrote(let count): return .moved(count)
            case .wantRead: return .wait(.readable)
            case .wantWrite: return .wait(.writable)
            case .failed(let failure): return .failed(errno: ECONNRESET, detail: failure.description)
            }
        }
    }

    /// Passes an ended stream on: close_notify for TLS, then a FIN either way. False while
    /// the close_notify waits for the socket: call again once writable (the FIN follows it).
    func shutdownWrite() -> Bool {
        if case .tls(let connection) = self, !connection.shutdown() { return false }
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        return true
    }

    /// Frees the TLS state (if any) and closes the descriptor.
    func close() {
        if case .tls(let connection) = self { connection.free() }
        _ = Glibc.close(fd)
    }
}
