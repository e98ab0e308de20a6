/// What a `TunnelSocket` tells its app, with GDSocket's names. Every call arrives on the
/// socket's callback queue, never on an I/O thread.
public protocol TunnelSocketDelegate: AnyObject, Sendable {
    /// The tunnel is open: fill `writeStream` and call `write()`.
    func onOpen(_ socket: TunnelSocket)
    /// Bytes arrived in `readStream`; drain what you want of it.
    func onRead(_ socket: TunnelSocket)
    /// The socket is closed: by `disconnect()`, or because the server ended the stream.
    func onClose(_ socket: TunnelSocket)
    /// The tunnel did not open, or broke; no other call follows.
    func onErr(_ socket: TunnelSocket, error: RelayClientError)
}
