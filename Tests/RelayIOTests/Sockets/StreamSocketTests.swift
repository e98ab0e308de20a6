import Dispatch
import Glibc
@testable import RelayIO
import Testing

/// A StreamSocket over a loopback pair that records what its read events deliver.
final class ReadingSocket: Sendable {
    let pair: LoopbackPair
    let loop: EventLoop
    let socket: LoopBound<StreamSocket>
    let inode: UInt64
    let bytes = Shared<[UInt8]>([])
    let eof = Shared(false)
    let events = Shared(0)

    init(loop: EventLoop) throws {
        pair = try LoopbackPair.make()
        self.loop = loop
        socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
        inode = try #require(Descriptors.inode(of: pair.local))
    }

    /// Call on the loop: reads until `.wouldBlock` per event, pauses at EOF.
    func startReading() {
        let socket = self.socket.value
        socket.startReading { [self] in
            events.update { $0 += 1 }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                switch buffer.withUnsafeMutableBytes({ socket.read(into: $0) }) {
                case .bytes(let count):
                    bytes.update { $0 += buffer[..<count] }
                case .wouldBlock:
                    return
                case .eof, .error:
                    eof.update { $0 = true }
                    socket.pauseReading()
                    return
                }
            }
        }
    }
}

extension RelayIOSuite {
    @Suite struct StreamSocketTests {
        let group = EventLoopGroup(count: 1)

        @Test func readsUntilEOF() throws {
            let reading = try ReadingSocket(loop: group.next())
            let (pair, loop, socket, inode, bytes, eof) = (reading.pair, reading.loop, reading.socket, reading.inode,
                                                          reading.bytes, reading.eof)
            defer { close(pair.peer) }
            loop.sync { reading.startReading() }
            let payload = Pattern.bytes(300_000, seed: 3)
            #expect(Peer.sendAll(pair.peer, payload) == 0)
            _ = shutdown(pair.peer, Int32(SHUT_WR))
            #expect(eventually { eof.value })
            #expect(bytes.value == payload)
            loop.sync { socket.value.close() }
            #expect(Descriptors.waitUntilClosed(inode))
        }

        @Test func pauseAndResumeAreIdempotentAndPauseStopsEvents() throws {
            let reading = try ReadingSocket(loop: group.next())
            let (pair, loop, socket, inode, bytes, events) = (reading.pair, reading.loop, reading.socket, reading.inode,
                                                             reading.bytes, reading.events)
            defer { close(pair.peer) }
            loop.sync {
                socket.value.pauseReading()  // before any source: nothing to pause
                socket.value.resumeReading()
                reading.startReading()
                socket.value.pauseReading()
                socket.value.pauseReading()
            }
            #expect(Peer.sendAll(pair.peer, Array("while paused".utf8)) == 0)
            usleep(100_000)
            #expect(events.value == 0, "a paused socket delivered a read event")
            loop.sync {
                socket.value.resumeReading()
                socket.value.resumeReading()
            }
            #expect(eventually { bytes.value == Array("while paused".utf8) })
            // Closing while paused must still cancel the (suspended) source and close the fd.
            loop.sync {
                socket.value.pauseReading()
                socket.value.close()
                socket.value.close()
            }
            #expect(Descriptors.waitUntilClosed(inode), "close() while paused leaked the fd")
            #expect(Peer.recvOnce(pair.peer) == 0)
        }

        @Test func closeWithReadAndWriteSourcesReleasesTheDescriptor() throws {
            let pair = try LoopbackPair.make(peerReceiveBuffer: 16 * 1024, localSendBuffer: 16 * 1024)
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let inode = try #require(Descriptors.inode(of: pair.local))
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            loop.sync {
                socket.value.startReading {}
                socket.value.pauseReading()
                writer.value.enqueue(Pattern.bytes(2 * 1024 * 1024, seed: 4))  // leaves a write source waiting
                #expect(writer.value.pendingBytes > 0)
            }
            loop.sync { socket.value.close() }
            #expect(Descriptors.waitUntilClosed(inode), "close() leaked the fd")
        }

        @Test func detachFDCancelsSourcesButKeepsTheDescriptorOpen() throws {
            let pair = try LoopbackPair.make()
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let inode = try #require(Descriptors.inode(of: pair.local))
            let events = Shared(0)
            let fd = loop.sync {
                socket.value.startReading { events.update { $0 += 1 } }
                return socket.value.detachFD()
            }
            #expect(fd == pair.local)
            let unclaimedBefore = loop.sync { loop.unclaimedSocketEvents }
            #expect(Peer.sendAll(pair.peer, [1, 2, 3]) == 0)
            usleep(100_000)
            FailureWatchTests.spinTheLoop(loop)
            #expect(events.value == 0, "a detached socket still delivers events")
            // Nobody registered it again in that pass: its entry left epoll before the loop
            // waited, rather than staying armed and reported on every wait.
            #expect(loop.sync { loop.unclaimedSocketEvents } - unclaimedBefore <= 1)
            #expect(Descriptors.isOpenSocket(inode), "detachFD closed the descriptor it handed over")
            var buffer = [UInt8](repeating: 0, count: 8)
            #expect(recv(fd, &buffer, 8, 0) == 3)
            close(fd)
        }

        /// A relay taking a detached socket over in the same pass re-arms the epoll entry the
        /// socket left (one MOD), under its own token: its reads are delivered to it.
        @Test func aSocketHandedOverInOnePassReadsForItsNewOwner() throws {
            let pair = try LoopbackPair.make()
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let oldEvents = Shared(0)
            let newEvents = Shared(0)
            let received = Shared(0)
            let unclaimedBefore = loop.sync { loop.unclaimedSocketEvents }
            let registration = loop.sync {
                socket.value.startReading { oldEvents.update { $0 += 1 } }
                let fd = socket.value.detachFD()
                let registration = loop.register(fd)
                registration.onReadable = {
                    newEvents.update { $0 += 1 }
                    var buffer = [UInt8](repeating: 0, count: 64)
                    while true {
                        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                        if count <= 0 { break }
                        received.update { $0 += count }
                    }
                }
                registration.setInterest(read: true, write: false)
                return LoopBound(registration, on: loop)
            }
            #expect(Peer.sendAll(pair.peer, [1, 2, 3, 4]) == 0)
            #expect(eventually { received.value == 4 }, "the new owner never heard the bytes")
            FailureWatchTests.spinTheLoop(loop)
            #expect(oldEvents.value == 0, "the old owner still heard events")
            #expect(newEvents.value >= 1)
            #expect(loop.sync { loop.unclaimedSocketEvents } - unclaimedBefore <= 1)
            loop.sync {
                registration.value.deregister(fdClosing: true)
                close(pair.local)
            }
        }

        /// A new owner that wants nothing from a handed-over socket at first (a relay whose
        /// read side already finished) must still take the entry over: left armed under the
        /// old token, a socket at EOF would be reported, unclaimed, on every wait.
        @Test func aHandedOverSocketWantingNothingLeavesNoArmedEntry() throws {
            let pair = try LoopbackPair.make()
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let failures = Shared(0)
            let unclaimedBefore = loop.sync { loop.unclaimedSocketEvents }
            let registration = loop.sync {
                socket.value.startReading {}
                socket.value.pauseReading()  // lazily: the entry stays armed for reading
                let fd = socket.value.detachFD()
                let registration = loop.register(fd)
                registration.onFailure = {
                    failures.update { $0 += 1 }
                    return false
                }
                registration.setInterest(read: false, write: false)
                return LoopBound(registration, on: loop)
            }
            #expect(Peer.sendAll(pair.peer, [1, 2, 3]) == 0)
            shutdown(pair.peer, Int32(SHUT_WR))
            usleep(50_000)
            FailureWatchTests.spinTheLoop(loop)
            #expect(loop.sync { loop.unclaimedSocketEvents } - unclaimedBefore <= 1,
                    "the old owner's armed entry was reported on every wait")
            #expect(failures.value == 0, "data and a FIN are not a failure")
            loop.sync {
                registration.value.deregister(fdClosing: true)
                close(pair.local)
            }
        }

        /// 4 MiB to a peer that does not read yet: most of it queues, then drains once read.
        @Test func bufferedWriterQueuesForASlowReaderAndReportsDrainedOnce() throws {
            let pair = try LoopbackPair.make(peerReceiveBuffer: 64 * 1024, localSendBuffer: 64 * 1024)
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            let drained = Shared(0)
            let errors = Shared(0)
            let payload = Pattern.bytes(4 * 1024 * 1024, seed: 9)
            let pendingAfterEnqueue = loop.sync {
                writer.value.onDrained = { drained.update { $0 += 1 } }
                writer.value.onError = { _ in errors.update { $0 += 1 } }
                writer.value.enqueue(Array(payload[..<(1024 * 1024)]))
                writer.value.enqueue(Array(payload[(1024 * 1024)...]))
                return writer.value.pendingBytes
            }
            #expect(pendingAfterEnqueue > 2 * 1024 * 1024, "the kernel took \(4 * 1024 * 1024 - pendingAfterEnqueue) bytes at once")
            #expect(pendingAfterEnqueue <= payload.count)
            usleep(50_000)
            #expect(drained.value == 0)
            let received = Peer.receive(pair.peer, expected: payload, limit: payload.count)
            #expect(received.count == payload.count)
            #expect(received.firstMismatch == nil)
            #expect(eventually { drained.value == 1 })
            usleep(50_000)
            #expect(drained.value == 1)
            #expect(loop.sync { writer.value.pendingBytes } == 0)
            #expect(errors.value == 0)
            loop.sync { socket.value.close() }
        }

        /// A writer that never empties (the caller tops it up below its high-water mark while
        /// the peer keeps reading) must not keep the chunks the kernel already took: memory
        /// follows pendingBytes, not the bytes ever written.
        @Test func aWriterThatNeverEmptiesDoesNotKeepWrittenChunks() throws {
            let pair = try LoopbackPair.make(peerReceiveBuffer: 64 * 1024, localSendBuffer: 64 * 1024)
            defer { close(pair.peer) }
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            // RSS is the whole test process's, and other suites run alongside: the bound is
            // half of what a writer keeping every chunk would grow, not a tight budget.
            let total = 256 * 1024 * 1024
            let chunk = 64 * 1024
            let enqueued = Shared(0)
            let drainedEarly = Shared(0)
            let residentBefore = Self.residentBytes()
            let residentPeak = Shared(residentBefore)
            let topUp = LoopRepeater(loop: loop, every: .milliseconds(1)) {
                writer.value.onDrained = { if enqueued.value < total { drainedEarly.update { $0 += 1 } } }
                while writer.value.pendingBytes < 8 * 1024 * 1024 && enqueued.value < total {
                    writer.value.enqueue([UInt8](repeating: 0x42, count: chunk))
                    enqueued.update { $0 += chunk }
                }
                let resident = Self.residentBytes()
                residentPeak.update { $0 = max($0, resident) }
            }
            defer { topUp.cancel() }
            // Reads 64 KiB a millisecond: 8 MiB queued outlasts any hiccup of the 1 ms top-up.
            let reader = Worker { Peer.receive(pair.peer, expected: nil, limit: total, chunk: 64 * 1024) { usleep(1_000) } }
            let received = try #require(reader.join(.seconds(60)))
            topUp.cancel()
            #expect(received.count == total)
            #expect(drainedEarly.value == 0, "the queue emptied \(drainedEarly.value) times: the test did not keep it busy")
            let growth = residentPeak.value - residentBefore
            print("buffered writer: \(total >> 20) MiB through a never-empty queue, resident grew \(growth >> 20) MiB")
            #expect(growth < 128 * 1024 * 1024, "resident memory grew \(growth >> 20) MiB while at most ~8 MiB were pending")
            loop.sync { socket.value.close() }
        }

        static func residentBytes() -> Int {
            guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
            let fields = text.split(separator: " ")
            return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
        }

        /// Handing a socket on (to a splice relay) must not lose or reorder what is queued.
        @Test func takeUnsentReturnsExactlyTheBytesTheKernelDidNotTake() throws {
            let pair = try LoopbackPair.make(peerReceiveBuffer: 4096, localSendBuffer: 4096)
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            let total = 1 << 20
            let data = Pattern.bytes(total, seed: 0x7A)
            let unsent = loop.sync { () -> [UInt8] in
                for start in stride(from: 0, to: total, by: 64 * 1024) {
                    writer.value.enqueue(Array(data[start..<min(start + 64 * 1024, total)]))
                }
                let pending = writer.value.pendingBytes
                let taken = writer.value.takeUnsent()
                precondition(writer.value.pendingBytes == 0)
                return pending == taken.count ? taken : []
            }
            #expect(!unsent.isEmpty, "the peer never read, so most of 1 MiB must still be queued")
            #expect(unsent.count < total)
            let written = total - unsent.count
            let received = Peer.receive(pair.peer, expected: Array(data[..<written]), limit: written)
            #expect(received.count == written)
            #expect(received.firstMismatch == nil, "what the kernel took is the prefix")
            #expect(unsent == Array(data[written...]), "what was handed back is exactly the rest, in order")
            loop.sync { socket.value.close() }
            close(pair.peer)
        }

        @Test func writingToAResetPeerReportsOneErrorLater() throws {
            let pair = try LoopbackPair.make()
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            let errors = Shared<[Int32]>([])
            Peer.setLinger0(pair.peer)
            close(pair.peer)
            // Wait until our side has taken the reset in.
            #expect(eventually {
                var poller = pollfd(fd: pair.local, events: Int16(POLLIN), revents: 0)
                return poll(&poller, 1, 0) == 1 && poller.revents & Int16(POLLERR | POLLHUP) != 0
            })
            let reportedDuringEnqueue = loop.sync {
                writer.value.onError = { error in errors.update { $0.append(error.errno) } }
                writer.value.enqueue(Array("after the reset".utf8))
                let during = errors.value.count
                writer.value.enqueue(Array("and again".utf8))
                return during
            }
            #expect(reportedDuringEnqueue == 0, "onError ran inside enqueue")
            #expect(eventually { !errors.value.isEmpty })
            usleep(50_000)
            loop.sync { writer.value.enqueue([1]) }
            usleep(50_000)
            let seen = errors.value
            #expect(seen.count == 1)
            #expect(seen.allSatisfy { $0 == ECONNRESET || $0 == EPIPE }, "errno \(seen)")
            #expect(loop.sync { writer.value.pendingBytes } == 0)
            loop.sync { socket.value.close() }
        }

        /// The reset arrives while bytes are queued: the failure comes from the flush.
        @Test func aResetWhileBytesAreQueuedReportsOneError() throws {
            let pair = try LoopbackPair.make(peerReceiveBuffer: 16 * 1024, localSendBuffer: 16 * 1024)
            let loop = group.next()
            let socket = LoopBound(sending: StreamSocket(fd: pair.local, loop: loop), on: loop)
            let writer = loop.make { BufferedWriter(socket: socket.value) }
            let errors = Shared<[Int32]>([])
            let drained = Shared(0)
            loop.sync {
                writer.value.onError = { error in errors.update { $0.append(error.errno) } }
                writer.value.onDrained = { drained.update { $0 += 1 } }
                writer.value.enqueue(Pattern.bytes(1024 * 1024, seed: 10))
                #expect(writer.value.pendingBytes > 0)
            }
            _ = Peer.recvOnce(pair.peer)
            Peer.setLinger0(pair.peer)
            close(pair.peer)
            #expect(eventually { !errors.value.isEmpty })
            usleep(50_000)
            #expect(errors.value.count == 1)
            #expect(errors.value.allSatisfy { $0 == ECONNRESET || $0 == EPIPE }, "errno \(errors.value)")
            #expect(drained.value == 0)
            #expect(loop.sync { writer.value.pendingBytes } == 0)
            loop.sync { socket.value.close() }
        }
    }
}
