import Dispatch
import Foundation
import RelayClient
import RelayCore
import Synchronization
import Testing

extension IntegrationSuite {
    /// The GDSocket-style adapter through the real relay: callbacks in order, on the app's
    /// queue, with the bytes the server sent.
    @Suite("TunnelSocket through dynrelay")
    struct TunnelSocketTests {
        /// Records what the socket told it; echoes "ping" once open, disconnects after the reply.
        final class Recorder: TunnelSocketDelegate {
            let events = Mutex<[String]>([])
            let received = Mutex<[UInt8]>([])
            let onQueue = Mutex<Bool>(true)
            let done = DispatchSemaphore(value: 0)
            let queue: DispatchQueue
            let key = DispatchSpecificKey<Int>()
            let expected: Int

            init(queue: DispatchQueue, expected: Int) {
                self.queue = queue
                self.expected = expected
                queue.setSpecific(key: key, value: 7)
            }

            private func note(_ event: String) {
                events.withLock { $0.append(event) }
                if DispatchQueue.getSpecific(key: key) != 7 { onQueue.withLock { $0 = false } }
            }

            func onOpen(_ socket: TunnelSocket) {
                note("open")
                socket.writeStream.write("ping ")
                socket.writeStream.write(Array("pong".utf8))
                socket.write()
            }

            func onRead(_ socket: TunnelSocket) {
                note("read")
                let count = received.withLock { received in
                    received += socket.readStream.unreadData()
                    return received.count
                }
                if count >= expected { socket.disconnect() }
            }

            func onClose(_ socket: TunnelSocket) {
                note("close")
                done.signal()
            }

            func onErr(_ socket: TunnelSocket, error: RelayClientError) {
                note("err \(error.code) \(error.reasonCode ?? "")")
                done.signal()
            }
        }

        @Test("onOpen, writeStream + write(), onRead draining readStream, disconnect(), onClose")
        func echoThroughTheAdapter() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let queue = DispatchQueue(label: "app")
            let recorder = Recorder(queue: queue, expected: 9)
            let socket = TunnelSocket(host: "127.0.0.1", port: echo.port,
                                      options: try RelayTunnelTests.options(relay), queue: queue)
            socket.delegate = recorder
            socket.connect()
            #expect(recorder.done.wait(timeout: .now() + 20) == .success)
            #expect(recorder.received.withLock { $0 } == Array("ping pong".utf8))
            let events = recorder.events.withLock { $0 }
            #expect(events.first == "open" && events.last == "close" && events.dropFirst().dropLast().allSatisfy { $0 == "read" },
                    "\(events)")
            #expect(recorder.onQueue.withLock { $0 }, "every callback ran on the app's queue")
            #expect(socket.state == .closed)
        }

        @Test("a refusal reaches onErr with its reason code")
        func refusalReachesOnErr() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy([]))
            defer { relay.stop() }
            let queue = DispatchQueue(label: "app")
            let recorder = Recorder(queue: queue, expected: 1)
            let socket = TunnelSocket(host: "unregistered.example", port: 443,
                                      options: try RelayTunnelTests.options(relay), queue: queue)
            socket.delegate = recorder
            socket.connect()
            #expect(recorder.done.wait(timeout: .now() + 20) == .success)
            #expect(recorder.events.withLock { $0 } == ["err relay-refused not-registered"])
        }
    }
}
