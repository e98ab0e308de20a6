/// A connected byte stream of the client library: plain TCP (`TCPClientStream`), or TLS
/// over any other stream (`TLSClientStream`), so TLS to an app server can run inside a
/// tunnel whose relay is itself reached over TLS.
///
/// One read and one write may be pending at once (a reader task and a writer task); a
/// second of the same kind fails with `concurrent-operation`. Every call resumes exactly
/// once, every wait is bounded by the stream's timeouts, and cancelling the calling task
/// closes the stream and throws `cancelled`. Errors are `RelayClientError`.
public protocol ClientByteStream: AnyObject, Sendable {
    /// Up to `maxBytes` bytes as soon as some arrive; empty at the end of the stream.
    func read(maxBytes: Int) async throws(RelayClientError) -> [UInt8]

    /// Returns once all of `bytes` are handed to the kernel (or to the TLS layer below),
    /// waiting while the peer does not read: nothing is buffered beyond `bytes` itself.
    func write(_ bytes: [UInt8]) async throws(RelayClientError)

    /// Ends this side's direction once what was written is sent (TCP FIN; for TLS,
    /// close_notify, then the layer below ends too); reading goes on.
    func shutdownWrite() async throws(RelayClientError)

    /// Closes the stream at once (idempotent, from any thread); pending calls throw `closed`.
    func close()
}
