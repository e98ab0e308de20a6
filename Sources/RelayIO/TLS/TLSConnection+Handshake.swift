/// How far a handshake step over a socket got.
public enum TLSHandshakeProgress: Sendable, Equatable {
    case done
    case failed(TLSFailure)
    /// The socket is watched for the direction OpenSSL asked for; the step's `next` runs then.
    case waiting
}

extension TLSConnection {
    /// One step of the handshake over `socket`, the connection's own socket on its loop. When
    /// OpenSSL wants to read or write, the socket is watched for that direction alone and
    /// `next` (the caller's next step) runs when it is ready; done or failed, nothing is watched.
    /// The HTTPS listener's handshake and the relay's own handshake with an app server both
    /// step through here.
    public func stepHandshake(over socket: StreamSocket, next: @escaping () -> Void) -> TLSHandshakeProgress {
        switch handshake() {
        case .done:
            socket.pauseReading()
            return .done
        case .wantRead:
            socket.startReading(next)
            return .waiting
        case .wantWrite:
            socket.pauseReading()
            socket.whenWritable(next)
            return .waiting
        case .failed(let failure):
            return .failed(failure)
        }
    }
}
