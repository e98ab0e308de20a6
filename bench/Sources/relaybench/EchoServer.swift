#if canImport(Glibc)
import Glibc
#endif
import CEpoll

/// The upstream every client talks to: one epoll thread, level-triggered, so 10k+ idle
/// connections cost one small state entry each. The first byte of a connection picks the
/// behaviour: 'S' sinks everything after it and writes one 'K' per 16 MiB received (the
/// throughput client's end-to-end acknowledgement); anything else echoes the whole stream.
enum EchoServer {
    static let ackInterval = 16 << 20

    /// Per-connection state, indexed by descriptor.
    private struct Connection {
        enum Mode { case unknown, echo, sink }
        var open = false
        var mode = Mode.unknown
        var sunk = 0
        var pending: [UInt8] = []
    }

    static func run(_ options: Options) throws {
        let host = try options.string("host", default: "127.0.0.1")
        let port = UInt16(try options.int("port"))
        let listener = try listen(on: Endpoint(host: host, port: port))
        let epoll = epoll_create1(0)
        guard epoll >= 0 else { throw SocketError(operation: "epoll_create1") }
        try add(epoll, listener, events: EPOLLIN.rawValue)
        printError("relaybench: serving on \(host):\(port)\n")

        var connections: [Connection] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while true {
            let ready = epoll_wait(epoll, &events, Int32(events.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw SocketError(operation: "epoll_wait")
            }
            for index in 0..<Int(ready) {
                let fd = events[index].data.fd
                let flags = events[index].events
                if fd == listener {
                    acceptAll(listener, epoll: epoll, connections: &connections)
                    continue
                }
                if flags & EPOLLOUT.rawValue != 0 {
                    flush(fd, epoll: epoll, connections: &connections)
                } else if flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                          connections[Int(fd)].open, !connections[Int(fd)].pending.isEmpty {
                    drop(fd, connections: &connections)
                }
                if flags & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                   connections[Int(fd)].open, connections[Int(fd)].pending.isEmpty {
                    service(fd, epoll: epoll, buffer: buffer, connections: &connections)
                }
            }
        }
    }

    /// A non-blocking listening socket on `endpoint` (backlog 4096).
    static func listen(on endpoint: Endpoint) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(operation: "socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = try endpoint.sockaddr()
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw SocketError(operation: "bind \(endpoint)") }
        guard Glibc.listen(fd, 4096) == 0 else { throw SocketError(operation: "listen") }
        setNonBlocking(fd)
        return fd
    }

    private static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private static func add(_ epoll: Int32, _ fd: Int32, events: UInt32) throws {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SocketError(operation: "epoll_ctl add") }
    }

    private static func modify(_ epoll: Int32, _ fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event)
    }

    private static func acceptAll(_ listener: Int32, epoll: Int32, connections: inout [Connection]) {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                // EAGAIN: drained. EMFILE and friends: leave the rest in the backlog.
                return
            }
            setNonBlocking(fd)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Int(fd) >= connections.count {
                connections.append(contentsOf: repeatElement(Connection(), count: Int(fd) + 1024 - connections.count))
            }
            connections[Int(fd)] = Connection(open: true)
            do {
                try add(epoll, fd, events: EPOLLIN.rawValue)
            } catch {
                connections[Int(fd)] = Connection()
                close(fd)
            }
        }
    }

    private static func drop(_ fd: Int32, connections: inout [Connection]) {
        connections[Int(fd)] = Connection()
        close(fd) // closing removes it from the epoll set
    }

    private static func service(_ fd: Int32, epoll: Int32, buffer: UnsafeMutableRawBufferPointer, connections: inout [Connection]) {
        // Level-triggered: one read per wakeup keeps many busy connections fair.
        let n = read(fd, buffer.baseAddress!, buffer.count)
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            drop(fd, connections: &connections)
            return
        }
        if n == 0 {
            drop(fd, connections: &connections)
            return
        }
        var start = 0
        if connections[Int(fd)].mode == .unknown {
            if buffer[0] == UInt8(ascii: "S") {
                connections[Int(fd)].mode = .sink
                start = 1
            } else {
                connections[Int(fd)].mode = .echo
            }
        }
        switch connections[Int(fd)].mode {
        case .sink:
            let before = connections[Int(fd)].sunk
            let after = before + (n - start)
            connections[Int(fd)].sunk = after
            let acks = after / ackInterval - before / ackInterval
            if acks > 0 {
                let reply = [UInt8](repeating: UInt8(ascii: "K"), count: acks)
                _ = reply.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            }
        case .echo, .unknown:
            let written = write(fd, buffer.baseAddress!, n)
            if written < 0, errno != EAGAIN {
                drop(fd, connections: &connections)
                return
            }
            let done = max(written, 0)
            if done < n {
                // Stop reading until the peer drains what it has not taken yet.
                connections[Int(fd)].pending = Array(UnsafeRawBufferPointer(rebasing: buffer[done..<n]))
                modify(epoll, fd, events: EPOLLOUT.rawValue)
            }
        }
    }

    private static func flush(_ fd: Int32, epoll: Int32, connections: inout [Connection]) {
        guard connections[Int(fd)].open else { return }
        let pending = connections[Int(fd)].pending
        let written = pending.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        if written < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            drop(fd, connections: &connections)
            return
        }
        if written < pending.count {
            connections[Int(fd)].pending = Array(pending[written...])
        } else {
            connections[Int(fd)].pending = []
            modify(epoll, fd, events: EPOLLIN.rawValue)
        }
    }
}
