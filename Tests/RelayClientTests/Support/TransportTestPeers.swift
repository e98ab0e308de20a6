import Foundation
import Glibc
import Synchronization

/// Throwaway certificates made once per test process with the `openssl` CLI: a CA, a server
/// certificate it signs for localhost and 127.0.0.1, one it signs for another host, and a
/// self-signed one no CA vouches for.
final class TransportCertificates: Sendable {
    static let shared: TransportCertificates = {
        do { return try TransportCertificates() } catch { fatalError("cannot make test certificates: \(error)") }
    }()

    let directory: String
    var caFile: String { directory + "/ca.pem" }

    private init() throws {
        directory = NSTemporaryDirectory() + "relayclient-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", directory + "/ca.key", "-out", caFile, "-subj", "/CN=relayclient test CA", "-days", "2"])
        try issue("server", san: "DNS:localhost,IP:127.0.0.1")
        try issue("other-host", san: "DNS:other.example")
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key("self-signed"), "-out", certificate("self-signed"), "-subj", "/CN=localhost",
                          "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "2"])
    }

    func certificate(_ name: String) -> String { directory + "/\(name).pem" }
    func key(_ name: String) -> String { directory + "/\(name).key" }

    private func issue(_ name: String, san: String) throws {
        try Self.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key(name), "-out", directory + "/\(name).csr", "-subj", "/CN=\(name)",
                          "-addext", "subjectAltName=\(san)"])
        try "subjectAltName=\(san)\n".write(toFile: directory + "/\(name).ext", atomically: true, encoding: .utf8)
        try Self.openssl(["x509", "-req", "-in", directory + "/\(name).csr", "-CA", caFile, "-CAkey", directory + "/ca.key",
                          "-CAcreateserial", "-out", certificate(name), "-days", "2", "-extfile", directory + "/\(name).ext"])
    }

    struct Failed: Error, CustomStringConvertible { let description: String }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failed(description: "openssl \(arguments.first ?? ""): " + String(decoding: text, as: UTF8.self))
        }
    }
}

/// `openssl s_server -rev` on 127.0.0.1 and an ephemeral port: it answers each line with the
/// line reversed, one connection at a time. Killed when released.
final class ReversingTLSServer: @unchecked Sendable {  // touched from the test's task only
    let port: UInt16
    private let process = Process()
    private let outputPath: String

    init(certificate: String, key: String, _ arguments: [String] = []) throws {
        outputPath = NSTemporaryDirectory() + "s_server-\(UInt64.random(in: 0...UInt64.max)).log"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-rev", "-cert", certificate, "-key", key] + arguments
        process.standardInput = Pipe()
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)!
        process.standardError = FileHandle(forWritingAtPath: outputPath)!
        try process.run()
        var found: UInt16?
        for _ in 0..<500 where found == nil {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }) {
                found = line.split(separator: ":").last.flatMap { UInt16($0) }
            } else {
                usleep(20_000)
            }
        }
        guard let found else {
            process.terminate()
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw TransportCertificates.Failed(description: "s_server did not listen: \(output)")
        }
        port = found
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: outputPath)
    }
}

/// A blocking TCP server on loopback that runs `behaviour` on a thread for each of the
/// first `connections` it accepts. Every socket has 60 s send and receive timeouts, so no
/// behaviour outlives a silent client for long; long, because in a full parallel run the
/// test's own task may wait many seconds for a thread of the cooperative pool.
final class LoopbackServer: Sendable {
    let port: UInt16
    private let listenFD: Int32

    init(ipv6: Bool = false, connections: Int = 1, _ behaviour: @escaping @Sendable (Int32) -> Void) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        var length: socklen_t
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeBytes(of: &address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeBytes(of: &address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 1024) == 0 else { throw TransportCertificates.Failed(description: "bind: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = withUnsafeBytes(of: &storage) { raw in
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
        listenFD = fd
        Thread.detachNewThread {
            for _ in 0..<connections {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                var timeout = timeval(tv_sec: 60, tv_usec: 0)
                setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                Thread.detachNewThread { behaviour(client) }
            }
        }
    }

    deinit {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    /// Everything until EOF (or the receive timeout).
    static func receiveAll(_ fd: Int32, pause: useconds_t = 0) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return all }
            all += buffer[0..<count]
            if pause > 0 { usleep(pause) }
        }
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Closes with a reset instead of a FIN.
    static func reset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
    }
}

/// A flag a server thread polls until the test lets it go (or 60 s pass).
final class Release: Sendable {
    private let released = Atomic<Bool>(false)

    func release() { released.store(true, ordering: .relaxed) }

    func wait() {
        for _ in 0..<1200 where !released.load(ordering: .relaxed) { usleep(50_000) }
    }
}

/// Reads `stream` until `count` bytes or its end, bounded by the stream's own timeouts.
func readExactly(_ count: Int, from read: (Int) async throws -> [UInt8]) async throws -> [UInt8] {
    var all: [UInt8] = []
    while all.count < count {
        let chunk = try await read(count - all.count)
        if chunk.isEmpty { break }
        all += chunk
    }
    return all
}
