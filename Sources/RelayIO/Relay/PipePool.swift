import CRelayShims
import Glibc

/// A pipe used as splice(2)'s in-kernel buffer between two sockets.
public struct SplicePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32
    /// Bytes it holds: `PipePool.pipeSize`, or the kernel default if the resize was refused.
    let capacity: Int
}

/// Empty pipes kept for reuse, one pool per loop. A tunnel borrows a pipe only while bytes
/// are in flight, so ten thousand idle tunnels hold no pipes at all. The pool also owns the
/// loop's copy buffer, which `SplicePump` moves small reads through (empty between uses).
/// Loop-confined: touched only on its loop.
public final class PipePool {
    /// Bytes one pipe holds; larger pipes mean fewer splice calls per MiB.
    public static let pipeSize: Int32 = 256 * 1024
    /// Bytes of the copy buffer: a read that fills it marks a bulk stream, which splices.
    public static let copyBufferSize = 16 * 1024
    /// Holds the bytes of one recv until they are sent (or copied aside) in the same call.
    let copyBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: PipePool.copyBufferSize, alignment: 16)
    private let maxIdle: Int
    private var idle: [SplicePipe] = []
    /// Pipes created and not yet closed (idle here or lent out).
    public private(set) var openPipes = 0

    /// Keeps at most `maxIdle` empty pipes; more are closed as they come back.
    public init(maxIdle: Int = 64) {
        self.maxIdle = maxIdle
    }

    deinit {
        copyBuffer.deallocate()
        for pipe in idle { discard(pipe) }
    }

    /// An empty pipe, or the error that prevented making one (EMFILE).
    func take() throws(IOError) -> SplicePipe {
        if let pipe = idle.popLast() { return pipe }
        var fds: [Int32] = [0, 0]
        guard crelay_pipe2_nonblocking(&fds) == 0 else { throw IOError("pipe2", errno: errno) }
        // Best effort: the default 64 KiB still works when the limit is lower.
        let size = crelay_set_pipe_size(fds[1], Self.pipeSize)
        openPipes += 1
        return SplicePipe(readFD: fds[0], writeFD: fds[1], capacity: Int(size > 0 ? size : 65536))
    }

    /// Returns a pipe that is known to be empty.
    func give(_ pipe: SplicePipe) {
        if idle.count < maxIdle {
            idle.append(pipe)
        } else {
            discard(pipe)
        }
    }

    /// Closes a pipe that may still hold bytes (its tunnel broke).
    func discard(_ pipe: SplicePipe) {
        close(pipe.readFD)
        close(pipe.writeFD)
        openPipes -= 1
    }

    /// Pipes lent to tunnels right now.
    public var lentPipes: Int { openPipes - idle.count }
}
