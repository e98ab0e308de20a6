/// How a relay ended, and how many bytes went each way.
public struct SpliceResult: Sendable, Equatable {
    /// Why the relay ended.
    public enum End: Sendable, Equatable {
        /// Both sides closed in order (each direction saw EOF and was shut down).
        case bothClosed
        /// Side A reset its connection (or refused bytes after closing).
        case resetByA
        /// Side B reset its connection (or refused bytes after closing).
        case resetByB
        /// Side A's TLS stream ended with a bare FIN, no close_notify: a cut, not an end, so
        /// B was reset rather than sent a FIN (`TLSRelayPump` only).
        case truncatedByA
        /// Side B's TLS stream ended with a bare FIN, no close_notify (`TLSRelayPump` only).
        case truncatedByB
        /// `abort()` was called (idle timeout, shutdown).
        case aborted
        /// A failure that is no peer's reset: no pipe could be made, or a socket failed
        /// otherwise (EIO, ETIMEDOUT...).
        case error(IOError)
    }

    /// Bytes written to B (initial bytes included).
    public var bytesAtoB: UInt64
    /// Bytes written to A (initial bytes included).
    public var bytesBtoA: UInt64
    public var end: End
}
