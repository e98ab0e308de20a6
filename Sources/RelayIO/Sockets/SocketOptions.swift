import CRelayShims
import Glibc

/// Socket calls shared by listeners, connectors and streams.
enum SocketOptions {
    static func setInt(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A new nonblocking, close-on-exec stream socket for `family`.
    static func streamSocket(family: Int32) throws(IOError) -> Int32 {
        let fd = crelay_socket_stream_nonblocking(family)
        guard fd >= 0 else { throw IOError("socket", errno: errno) }
        return fd
    }

    /// Nagle off (a relay forwards segments as they come; batching them only adds latency),
    /// and at most a pipe's worth of bytes the peer has not been sent waiting in the send
    /// buffer (TCP_NOTSENT_LOWAT): a peer that stops reading then pins about that much of
    /// the relay's memory, not the megabytes the kernel's autotuning grows a buffer to.
    static func tuneForRelay(_ fd: Int32) {
        setInt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        setInt(fd, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, PipePool.pipeSize)
    }

    /// Abortive close on the next close(2): the peer sees a reset, not an orderly end.
    static func setLinger0(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}

/// Closes `fd` with a reset instead of a FIN: for a stream the relay gives up, whose peer
/// must not take the close for an orderly end.
public func closeWithReset(_ fd: Int32) {
    SocketOptions.setLinger0(fd)
    close(fd)
}
