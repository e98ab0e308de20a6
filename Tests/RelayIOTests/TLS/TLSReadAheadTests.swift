import Glibc
import RelayIO
import Testing

/// A server-role `TLSConnection` on an accepted loopback socket, and a client whose records
/// the test moves to the socket by hand, so it decides where each record's bytes stop.
private final class HandDeliveredClient {
    let server: TLSConnection
    let client: TLSConnection
    private let wire: Int32
    private let listener: Int32

    init() throws {
        let (listener, port) = try TLSTestDriver.listen()
        self.listener = listener
        wire = try TLSTestDriver.connect(port: port)
        let accepted = try #require(TLSTestDriver.accept(listener))
        let files = TLSTestCertificates.shared
        let serverContext = try TLSContext.server(certificateFile: files.certificate("server"), keyFile: files.key("server"),
                                                  versions: .modern)
        server = try TLSConnection(fd: accepted, context: serverContext, role: .server)
        let clientContext = try TLSContext.client(caFile: files.caCertificate, versions: .modern)
        client = try TLSConnection(memoryTransportWith: clientContext, role: .client(host: "localhost", port: port))
    }

    deinit {
        close(server.fd)
        close(wire)
        close(listener)
    }

    /// Both handshakes to their end, the client's records carried whole.
    func handshake() throws {
        let end = TLSTestDriver.deadline(.seconds(10))
        var clientDone = false
        var serverDone = false
        while !(clientDone && serverDone) {
            try #require(monotonicNanos() < end, "the handshake did not finish")
            if !clientDone {
                switch client.handshake() {
                case .done: clientDone = true
                case .failed(let failure): Issue.record("client handshake: \(failure)"); return
                case .wantRead, .wantWrite: break
                }
            }
            send(client.takeCiphertext(maxBytes: .max))
            if !serverDone {
                switch server.handshake() {
                case .done: serverDone = true
                case .failed(let failure): Issue.record("server handshake: \(failure)"); return
                case .wantRead, .wantWrite: break
                }
            }
            receiveForClient()
        }
    }

    /// `count` bytes sealed by the client as records of at most 16 KiB, as ciphertext.
    func seal(_ count: Int) -> [UInt8] {
        let plaintext = [UInt8](repeating: 0x61, count: count)
        var offset = 0
        while offset < count {
            let result = plaintext.withUnsafeBytes { client.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard case .wrote(let wrote) = result else { Issue.record("client write: \(result)"); return [] }
            offset += wrote
        }
        return client.takeCiphertext(maxBytes: .max)
    }

    /// Puts `bytes` on the wire and waits until the server's socket has them all.
    func send(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(wire, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent > 0 { offset += sent } else { _ = TLSTestDriver.poll(wire, write: true, until: TLSTestDriver.deadline(.seconds(5))) }
        }
        var queued: Int32 = 0
        let end = TLSTestDriver.deadline(.seconds(5))
        repeat { _ = ioctl(server.fd, UInt(FIONREAD), &queued) } while queued < bytes.count && monotonicNanos() < end && usleep(1000) == 0
    }

    private func receiveForClient() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let got = buffer.withUnsafeMutableBytes { recv(wire, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if got > 0 { buffer.withUnsafeBytes { client.receiveCiphertext(UnsafeRawBufferPointer(rebasing: $0[..<got])) } }
    }

    /// One server read into a buffer of `size` bytes.
    func read(size: Int) -> TLSReadResult {
        var buffer = [UInt8](repeating: 0, count: size)
        return buffer.withUnsafeMutableBytes { server.read(into: $0) }
    }
}

extension RelayIOSuite {
    /// Over a socket, OpenSSL reads ahead of the record it returns; `hasBufferedInput` is what
    /// tells a reader that stopped early (a full buffer, a paused direction) to come back for
    /// those records, because epoll will not announce bytes the kernel no longer holds.
    @Suite struct TLSReadAheadTests {
        @Test func recordsReadAheadOfAFullBufferAreBufferedInputUntilTaken() throws {
            let side = try HandDeliveredClient()
            try side.handshake()
            side.send(side.seal(3 * 16_384))
            // One record's worth: the read stops at a record boundary, nothing decrypted is left,
            // and the next two records are already out of the kernel.
            #expect(side.read(size: 16_384) == .bytes(16_384))
            var queued: Int32 = -1
            _ = ioctl(side.server.fd, UInt(FIONREAD), &queued)
            #expect(queued == 0, "the kernel still holds \(queued) bytes: nothing was read ahead")
            #expect(side.server.hasBufferedInput)
            #expect(side.read(size: 16_384) == .bytes(16_384))
            #expect(side.read(size: 16_384) == .bytes(16_384))
            #expect(side.read(size: 16_384) == .wantRead)
            #expect(!side.server.hasBufferedInput)
        }

        @Test func partOfARecordIsNotBufferedInputSoAReaderWaitsForTheSocket() throws {
            let side = try HandDeliveredClient()
            try side.handshake()
            let record = side.seal(1_000)
            side.send(Array(record[..<100]))
            #expect(side.read(size: 16_384) == .wantRead)
            // OpenSSL holds 100 bytes it cannot use; coming back for them would spin the loop.
            #expect(!side.server.hasBufferedInput)
            side.send(Array(record[100...]))
            #expect(side.read(size: 16_384) == .bytes(1_000))
        }
    }
}
