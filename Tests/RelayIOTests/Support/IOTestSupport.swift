import Dispatch
import Foundation
import Glibc
import RelayIO
import Synchronization
import Testing

/// Every RelayIO suite nests in this one so that they run one at a time: the socket tests
/// watch descriptors, pipes and loop queues that a parallel test would disturb.
@Suite(.serialized) enum RelayIOSuite {}

/// A value set once from any thread and awaited with a deadline.
final class Latch<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    func set(_ newValue: Value) {
        let first = value.withLock { current -> Bool in
            guard current == nil else { return false }
            current = newValue
            return true
        }
        if first { signal.signal() }
    }

    var peek: Value? { value.withLock { $0 } }

    /// The value, or nil when it did not arrive before the deadline.
    func wait(_ timeout: Duration = .seconds(10)) -> Value? {
        if let current = peek { return current }
        _ = signal.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds)))
        return peek
    }
}

/// A counter (or any small state) shared between a test and loop/helper threads.
final class Shared<Value: Sendable>: Sendable {
    private let state: Mutex<Value>
    init(_ initial: Value) { state = Mutex(initial) }
    var value: Value { state.withLock { $0 } }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { state.withLock { body(&$0) } }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// Polls `condition` until it holds or the deadline passes; never waits unbounded.
@discardableResult
func eventually(within timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNanos() + UInt64(timeout.nanoseconds)
    while true {
        if condition() { return true }
        if monotonicNanos() > deadline { return false }
        usleep(1_000)
    }
}

/// A blocking helper thread (a peer socket's reader or writer) joined with a deadline.
final class Worker<Value: Sendable>: Sendable {
    private let result = Latch<Value>()

    init(_ name: String = "relayio-test-peer", _ body: @escaping @Sendable () -> Value) {
        let result = self.result
        let thread = Thread { result.set(body()) }
        thread.name = name
        thread.start()
    }

    /// The thread's result, or nil when it is still running at the deadline.
    func join(_ timeout: Duration = .seconds(30)) -> Value? { result.wait(timeout) }
}

// MARK: Bytes

enum Pattern {
    /// `count` deterministic pseudo-random bytes (SplitMix64 words) from `seed`: two streams
    /// with different seeds never agree, so swapped, repeated or dropped bytes show.
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawPointer(buffer.baseAddress!)
            var state = seed
            var offset = 0
            while offset < count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                if offset + 8 <= count {
                    raw.storeBytes(of: z.littleEndian, toByteOffset: offset, as: UInt64.self)
                } else {
                    withUnsafeBytes(of: z.littleEndian) { word in
                        for index in 0..<(count - offset) { buffer[offset + index] = word[index] }
                    }
                }
                offset += 8
            }
            initialized = count
        }
    }
}

// MARK: Blocking peer sockets

/// How a peer's read loop ended.
enum PeerEnd: Equatable, Sendable {
    case eof
    case error(Int32)
    case limit
}

/// What a peer received: how much, whether it matched, how it ended.
struct Received: Sendable {
    var count = 0
    /// Offset of the first byte that differs from the expected stream (or runs past it).
    var firstMismatch: Int?
    var end: PeerEnd = .eof
}

enum Peer {
    /// Sends everything; 0 or the errno that stopped it.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8], chunk: Int = 256 * 1024) -> Int32 {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let length = min(chunk, raw.count - offset)
                let sent = send(fd, raw.baseAddress! + offset, length, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += sent
            }
            return 0
        }
    }

    /// Reads until EOF, an error or `limit` bytes, comparing with `expected` as it goes.
    static func receive(_ fd: Int32, expected: [UInt8]?, limit: Int = .max, chunk: Int = 256 * 1024,
                        pause: (() -> Void)? = nil) -> Received {
        var outcome = Received()
        var buffer = [UInt8](repeating: 0, count: chunk)
        while outcome.count < limit {
            let want = min(chunk, limit - outcome.count)
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, want, 0) }
            if got < 0 {
                if errno == EINTR { continue }
                outcome.end = .error(errno)
                return outcome
            }
            if got == 0 {
                outcome.end = .eof
                return outcome
            }
            if let expected, outcome.firstMismatch == nil {
                if outcome.count + got > expected.count {
                    outcome.firstMismatch = expected.count
                } else {
                    let same = buffer.withUnsafeBytes { received in
                        expected.withUnsafeBytes { wanted in
                            memcmp(received.baseAddress!, wanted.baseAddress! + outcome.count, got) == 0
                        }
                    }
                    if !same {
                        let start = outcome.count
                        let index = (0..<got).first { buffer[$0] != expected[start + $0] } ?? 0
                        outcome.firstMismatch = start + index
                    }
                }
            }
            outcome.count += got
            pause?()
        }
        outcome.end = .limit
        return outcome
    }

    /// Sends until the first error (the errno) or `limit` bytes (0).
    static func sendUntilError(_ fd: Int32, limit: Int) -> Int32 {
        let block = [UInt8](repeating: 0x5A, count: 64 * 1024)
        var total = 0
        while total < limit {
            let sent = block.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                return errno
            }
            total += sent
        }
        return 0
    }

    /// One recv: byte count, 0 at EOF, or -errno.
    static func recvOnce(_ fd: Int32, max: Int = 64 * 1024) -> Int {
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
            if got < 0 && errno == EINTR { continue }
            return got < 0 ? -Int(errno) : got
        }
    }

    static func setLinger0(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    static func setInt(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Receive and send timeouts so a blocked peer thread gives up instead of hanging the run.
    static func setTimeouts(_ fd: Int32, seconds: Int = 20) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &storage) { SocketAddress(storage: $0.baseAddress!)?.port ?? 0 }
    }

    /// A blocking socket connected to `address`, or the connect errno.
    static func connect(to address: SocketAddress) -> Result<Int32, IOError> {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failure(IOError("socket", errno: errno)) }
        setTimeouts(fd)
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 else {
            let code = errno
            close(fd)
            return .failure(IOError("connect", errno: code))
        }
        return .success(fd)
    }
}

/// A connected loopback TCP pair: `peer` is blocking (a test thread drives it, with
/// timeouts), `local` is nonblocking and close-on-exec (what RelayIO gets from accept).
struct LoopbackPair {
    let peer: Int32
    let local: Int32

    /// `peerReceiveBuffer`/`localSendBuffer` shrink the kernel buffers (set before the
    /// handshake so the window follows) to make backpressure appear after a few KiB.
    static func make(peerReceiveBuffer: Int32? = nil, localSendBuffer: Int32? = nil,
                     localReceiveBuffer: Int32? = nil) throws -> LoopbackPair {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw IOError("socket", errno: errno) }
        defer { close(listener) }
        let any = SocketAddress(ip: "127.0.0.1", port: 0)!
        guard any.withSockAddr({ bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else {
            throw IOError("bind", errno: errno)
        }
        let port = Peer.localPort(listener)
        let peer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard peer >= 0 else { throw IOError("socket", errno: errno) }
        Peer.setTimeouts(peer)
        if let size = peerReceiveBuffer { Peer.setInt(peer, SOL_SOCKET, SO_RCVBUF, size) }
        let target = SocketAddress(ip: "127.0.0.1", port: port)!
        guard target.withSockAddr({ Glibc.connect(peer, $0, $1) }) == 0 else {
            let code = errno
            close(peer)
            throw IOError("connect", errno: code)
        }
        let local = accept(listener, nil, nil)
        guard local >= 0 else {
            let code = errno
            close(peer)
            throw IOError("accept", errno: code)
        }
        _ = fcntl(local, F_SETFL, fcntl(local, F_GETFL) | O_NONBLOCK)
        _ = fcntl(local, F_SETFD, FD_CLOEXEC)
        if let size = localSendBuffer { Peer.setInt(local, SOL_SOCKET, SO_SNDBUF, size) }
        // Forced past net.core.rmem_max (the tests run as root), so the queue really takes it.
        if let size = localReceiveBuffer { Peer.setInt(local, SOL_SOCKET, SO_RCVBUFFORCE, size) }
        return LoopbackPair(peer: peer, local: local)
    }
}

// MARK: Descriptors, seen from /proc

/// Identifies sockets and pipes by inode rather than fd number: numbers are reused at
/// once (also by other tests in the process), an inode names one open file for its life.
enum Descriptors {
    static func inode(of fd: Int32) -> UInt64? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// Inodes of this process's open sockets (`socket:[N]` links in /proc/self/fd).
    static func openSocketInodes() -> Set<UInt64> {
        var inodes = Set<UInt64>()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return inodes }
        for name in names {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  target.hasPrefix("socket:["), target.hasSuffix("]") else { continue }
            if let inode = UInt64(target.dropFirst("socket:[".count).dropLast()) { inodes.insert(inode) }
        }
        return inodes
    }

    static func isOpenSocket(_ inode: UInt64) -> Bool { openSocketInodes().contains(inode) }

    /// Waits (bounded) until no descriptor of this process refers to the socket.
    static func waitUntilClosed(_ inode: UInt64, within timeout: Duration = .seconds(5)) -> Bool {
        eventually(within: timeout) { !isOpenSocket(inode) }
    }

    /// This process's TCP sockets by inode, with their TCP state (TCP_INFO's first byte:
    /// 2 is SYN_SENT, 10 is LISTEN) and local port. Reading /proc/net/tcp instead would scan
    /// every socket of the machine.
    static func tcpSockets() -> [(inode: UInt64, state: UInt8, localPort: UInt16)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        var rows: [(inode: UInt64, state: UInt8, localPort: UInt16)] = []
        for name in names {
            guard let fd = Int32(name),
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  target.hasPrefix("socket:["),
                  let inode = UInt64(target.dropFirst("socket:[".count).dropLast()) else { continue }
            var info = [UInt8](repeating: 0, count: 256)
            var length = socklen_t(info.count)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0, length > 0,
                  Descriptors.inode(of: fd) == inode else { continue }
            rows.append((inode, info[0], Peer.localPort(fd)))
        }
        return rows
    }

    /// Inode of our socket listening on `port`.
    static func listeningSocket(on port: UInt16) -> UInt64? {
        tcpSockets().first { $0.state == 10 && $0.localPort == port }?.inode
    }

    /// Inodes of our IPv4 sockets still connecting (SYN_SENT) to `port`. Only that port:
    /// tests running in parallel in this process leave their own sockets connecting (the
    /// fillers of a full accept queue), which must not count as this test's.
    static func connectingSockets(to port: UInt16) -> Set<UInt64> {
        // Read to EOF: /proc files report a size of 0, and Foundation's String(contentsOfFile:)
        // returns only their first page.
        guard let file = fopen("/proc/net/tcp", "r") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        let table = String(decoding: bytes, as: UTF8.self)
        let hex = String(port, radix: 16, uppercase: true)
        let remoteSuffix = ":" + String(repeating: "0", count: 4 - hex.count) + hex
        var connecting = Set<UInt64>()
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "02", fields[2].hasSuffix(remoteSuffix),
                  let inode = UInt64(fields[9]) else { continue }
            connecting.insert(inode)
        }
        return connecting.intersection(openSocketInodes())
    }
}

/// Runs `body` on `loop` every `interval` until cancelled (a test's sampler or feeder).
final class LoopRepeater: Sendable {
    private let loop: EventLoop
    private let interval: Duration
    private let body: @Sendable () -> Void
    private let stopped = Shared(false)
    /// The pending timer, on the loop.
    private let timer: LoopBoundBox<LoopTimer?>

    init(loop: EventLoop, every interval: Duration, _ body: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.interval = interval
        self.body = body
        timer = .empty(on: loop)
        loop.execute { [self] in tick() }
    }

    private func tick() {
        guard !stopped.value else { return }
        body()
        timer.value = loop.scheduleTimer(after: interval) { [self] in tick() }
    }

    func cancel() {
        stopped.update { $0 = true }
        loop.sync { timer.value?.cancel() }
    }
}

extension EventLoop {
    /// Makes a loop-confined object on this loop (where its initializer may already
    /// register it) and hands it to the test thread bound to the loop.
    func make<Value>(_ make: @Sendable () -> Value) -> LoopBound<Value> {
        sync { LoopBound(make(), on: self) }
    }
}

extension LoopBound {
    /// Runs `body` with the value on its loop, from the test thread.
    func sync<Result: Sendable>(_ body: @Sendable (Value) -> Result) -> Result {
        loop.sync { body(value) }
    }
}
