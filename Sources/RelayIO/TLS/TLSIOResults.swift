/// What one non-blocking handshake step came to.
public enum TLSHandshakeResult: Sendable, Equatable {
    case done
    /// Call again once the socket is readable.
    case wantRead
    /// Call again once the socket is writable.
    case wantWrite
    case failed(TLSFailure)
}

/// What one non-blocking TLS read came to.
public enum TLSReadResult: Sendable, Equatable {
    /// Cleartext bytes placed at the start of the buffer.
    case bytes(Int)
    case wantRead
    /// The read must write first (a key update answered, a handshake message flushed):
    /// call again once the socket is writable.
    case wantWrite
    /// The peer sent close_notify: its stream ended in order.
    case closed
    /// TCP EOF without close_notify: the stream ended, but could have been cut.
    case eof
    case failed(TLSFailure)
}

/// What one non-blocking TLS write came to.
public enum TLSWriteResult: Sendable, Equatable {
    /// Cleartext bytes taken (a partial write takes fewer than offered; retry with the rest).
    case wrote(Int)
    /// The write must read first: call again, with the same bytes, once readable.
    case wantRead
    /// Call again, with the same bytes or more, once writable.
    case wantWrite
    case failed(TLSFailure)
}
