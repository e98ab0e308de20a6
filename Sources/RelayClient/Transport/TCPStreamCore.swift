import Glibc
import RelayIO

/// The loop side of a `TCPClientStream`: its socket and the one read and one write that may
/// be pending, each with its idle timer. Everything here runs on the socket's loop; the
/// stream reaches it through a `LoopBound`.
final class TCPStreamCore {
    private struct PendingRead {
        let maxBytes: Int
        let resume: ResumeOnce<[UInt8]>
        let timer: LoopTimer
    }

    private struct PendingWrite {
        let bytes: [UInt8]
        var offset = 0
        let resume: ResumeOnce<Void>
        var timer: LoopTimer?
    }

    let socket: StreamSocket
    private let idleTimeout: Duration
    private var reader: PendingRead?
    private var writer: PendingWrite?
    /// A `shutdownWrite` that waits for the pending write to be sent first.
    private var shutdownAfterWrite: ResumeOnce<Void>?
    /// Why the stream no longer works (closed or cancelled); every later call fails with it.
    private var ended: RelayClientError?

    init(socket: StreamSocket, idleTimeout: Duration) {
        self.socket = socket
        self.idleTimeout = idleTimeout
    }

    // MARK: Reading

    func read(maxBytes: Int, _ resume: ResumeOnce<[UInt8]>) {
        if let ended { return resume.fail(ended) }
        guard reader == nil else {
            return resume.fail(RelayClientError(.concurrentOperation, "a read is already pending on this stream"))
        }
        if attemptRead(maxBytes: maxBytes, resume) { return }
        let timer = socket.loop.scheduleTimer(after: idleTimeout) { [weak self] in
            self?.finishRead(.failure(RelayClientError(.timeout, "no byte arrived within the idle timeout")))
        }
        reader = PendingRead(maxBytes: maxBytes, resume: resume, timer: timer)
        socket.startReading { [weak self] in self?.readable() }
    }

    private func readable() {
        guard let pending = reader else { return socket.pauseReading() }
        if attemptRead(maxBytes: pending.maxBytes, pending.resume) {
            reader = nil
            pending.timer.cancel()
            socket.pauseReading()
        }
    }

    private func finishRead(_ result: Result<[UInt8], RelayClientError>) {
        guard let pending = reader else { return }
        reader = nil
        pending.timer.cancel()
        socket.pauseReading()
        pending.resume.resume(result)
    }

    /// Reads of at most this many bytes are copied out of the read buffer into one their size.
    static let smallRead = 16 * 1024

    /// One recv: true when it settled the read (bytes, the end, or an error).
    private func attemptRead(maxBytes: Int, _ resume: ResumeOnce<[UInt8]>) -> Bool {
        var outcome = ReadResult.wouldBlock
        let bytes = [UInt8](unsafeUninitializedCapacity: max(1, maxBytes)) { buffer, initialized in
            outcome = socket.read(into: UnsafeMutableRawBufferPointer(buffer))
            if case .bytes(let count) = outcome { initialized = count } else { initialized = 0 }
        }
        switch outcome {
        case .bytes(let count) where count <= Self.smallRead && maxBytes > Self.smallRead:
            // A short answer in a large buffer: keep only what arrived, so a caller that
            // holds it (a pooled connection's response, a tunnel's echo) does not hold the
            // whole buffer too.
            resume.succeed(Array(bytes[0..<count]))
        case .bytes: resume.succeed(bytes)
        case .eof: resume.succeed([])
        case .wouldBlock: return false
        case .error(let error): resume.fail(RelayClientError(error, doing: "read"))
        }
        return true
    }

    // MARK: Writing

    func write(_ bytes: [UInt8], _ resume: ResumeOnce<Void>) {
        if let ended { return resume.fail(ended) }
        guard writer == nil, shutdownAfterWrite == nil else {
            return resume.fail(RelayClientError(.concurrentOperation, "a write is already pending on this stream"))
        }
        guard !bytes.isEmpty else { return resume.succeed(()) }
        writer = PendingWrite(bytes: bytes, resume: resume)
        continueWriting()
    }

    private func continueWriting() {
        guard var pending = writer else { return }
        var progressed = false
        while pending.offset < pending.bytes.count {
            let offset = pending.offset
            let attempt: Result<Int, IOError> = pending.bytes.withUnsafeBytes { raw in
                do throws(IOError) {
                    return .success(try socket.write(UnsafeRawBufferPointer(rebasing: raw[offset...])))
                } catch {
                    return .failure(error)
                }
            }
            let written: Int
            switch attempt {
            case .success(let count): written = count
            case .failure(let error):
                writer = pending
                return finishWrite(.failure(RelayClientError(error, doing: "write")))
            }
            if written == 0 { break }
            pending.offset += written
            progressed = true
        }
        guard pending.offset < pending.bytes.count else {
            writer = pending
            return finishWrite(.success(()))
        }
        // The idle timer measures time without progress: each write that moved bytes restarts it.
        if progressed || pending.timer == nil {
            pending.timer?.cancel()
            pending.timer = socket.loop.scheduleTimer(after: idleTimeout) { [weak self] in
                self?.finishWrite(.failure(RelayClientError(.timeout, "the peer took no byte within the idle timeout")))
            }
        }
        writer = pending
        socket.whenWritable { [weak self] in self?.continueWriting() }
    }

    private func finishWrite(_ result: Result<Void, RelayClientError>) {
        guard let pending = writer else { return }
        writer = nil
        pending.timer?.cancel()
        pending.resume.resume(result)
        if let shutdown = shutdownAfterWrite {
            shutdownAfterWrite = nil
            if case .failure(let error) = result { return shutdown.fail(error) }
            socket.shutdownWrite()
            shutdown.succeed(())
        }
    }

    func shutdownWrite(_ resume: ResumeOnce<Void>) {
        if let ended { return resume.fail(ended) }
        guard shutdownAfterWrite == nil else {
            return resume.fail(RelayClientError(.concurrentOperation, "a shutdown is already pending on this stream"))
        }
        if writer != nil {
            shutdownAfterWrite = resume
            return
        }
        socket.shutdownWrite()
        resume.succeed(())
    }

    // MARK: Ending

    /// Closes the socket and fails what is pending with `reason` (idempotent).
    func end(_ reason: RelayClientError) {
        guard ended == nil else { return }
        ended = reason
        if let pending = reader {
            reader = nil
            pending.timer.cancel()
            pending.resume.fail(reason)
        }
        if let pending = writer {
            writer = nil
            pending.timer?.cancel()
            pending.resume.fail(reason)
        }
        if let shutdown = shutdownAfterWrite {
            shutdownAfterWrite = nil
            shutdown.fail(reason)
        }
        socket.close()
    }
}
