/// A loop-confined byte stream the relay reads and writes: a plain TCP socket
/// (`StreamSocket`) or one carrying TLS. Proxy connections, tunnel inspection and the
/// userspace relay are written against this, so the HTTPS listener runs the same code as the
/// plain one. Every method is called on `loop`'s thread only.
public protocol RelayStream: AnyObject {
    /// The loop the stream belongs to.
    var loop: EventLoop { get }
    /// Calls `onReadable` whenever a read may make progress; it should read until `.wouldBlock`.
    func startReading(_ onReadable: @escaping () -> Void)
    /// Stops read events until `resumeReading` (idempotent).
    func pauseReading()
    /// Resumes read events (idempotent).
    func resumeReading()
    /// One read into `buffer`: payload bytes, `.wouldBlock`, `.eof` (the peer finished
    /// sending) or an error.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult
    /// Writes what the stream takes now: the count (0 when it would block), or the error.
    /// After a 0 the caller offers the same bytes again once `whenWritable` fires.
    func write(_ bytes: UnsafeRawBufferPointer) throws(IOError) -> Int
    /// Calls `onWritable` once, when a write may make progress.
    func whenWritable(_ onWritable: @escaping () -> Void)
    /// Ends the sending direction after what was written; reading goes on.
    func shutdownWrite()
    /// The next close resets the connection.
    func setLinger0()
    /// Stops watching and closes (idempotent).
    func close()
}

extension StreamSocket: RelayStream {}
