import Dispatch
import Foundation
import RelayClient
import RelayCore
import Synchronization
import Testing

extension IntegrationSuite {
    /// The XHR-style `RelayHTTPRequest` through the real relay: its states in order on the
    /// app's queue, the response fields, synchronous sends, server credentials, abort.
    @Suite("HTTP request object")
    struct HTTPRequestObjectTests {
        /// Waits (bounded) until `request` is DONE.
        static func waitDone(_ request: RelayHTTPRequest, seconds: Double = 20) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if request.readyState == .DONE { return true }
                usleep(10_000)
            }
            return false
        }

        @Test("async: every state on the app's queue in order, then status, headers and text")
        func asyncStates() throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let client = try HTTPClientTests.client(relay)
            let queue = DispatchQueue(label: "app")
            let seen = Mutex<[RelayHTTPRequest.ReadyState]>([])
            let request = RelayHTTPRequest(client: client, callbackQueue: queue)
            request.onReadyStateChange = { _, readyState in
                dispatchPrecondition(condition: .onQueue(queue))
                seen.withLock { $0.append(readyState) }
            }
            #expect(request.readyState == .UNSENT)
            #expect(request.setRequestHeader("X-Early", "1") == false, "no header before open")
            #expect(request.open(method: "GET", url: "http://127.0.0.1:\(origin.port)/chunked"))
            #expect(request.setRequestHeader("Accept", "text/plain"))
            #expect(request.send())
            #expect(Self.waitDone(request))
            queue.sync {}
            #expect(seen.withLock { $0 } == [.OPENED, .SENT, .HEADERS_RECEIVED, .LOADING, .DONE])
            #expect(request.status == 200)
            #expect(request.statusText == "OK")
            #expect(request.getResponseHeader("transfer-encoding") == "chunked")
            #expect(request.getAllResponseHeaders()?.contains("Transfer-Encoding: chunked\r\n") == true)
            #expect(request.responseText == "abcdefg")
            #expect(request.error == nil)
        }

        @Test("sync send returns DONE; open's user and password answer the server's 401")
        func syncWithCredentials() throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let request = RelayHTTPRequest(client: try HTTPClientTests.client(relay), callbackQueue: DispatchQueue(label: "app"))
            #expect(request.open(method: "GET", url: "http://127.0.0.1:\(origin.port)/basic", async: false,
                                 user: ScriptedHTTPOrigin.basicUser, password: ScriptedHTTPOrigin.basicPassword))
            #expect(request.send())
            #expect(request.readyState == .DONE)
            #expect(request.status == 200)
            #expect(request.responseText == "welcome bob")

            #expect(request.open(method: "POST", url: "http://127.0.0.1:\(origin.port)/upload", async: false))
            #expect(request.send("twelve bytes"))
            #expect(request.responseText == "POST 12")
            #expect(request.open(method: "GET", url: "not a url") == false)
            #expect(request.error?.code == .invalidRequest)
        }

        @Test("abort during a large download ends DONE with aborted, then UNSENT")
        func abort() throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let request = RelayHTTPRequest(client: try HTTPClientTests.client(relay), callbackQueue: DispatchQueue(label: "app"))
            #expect(request.open(method: "GET", url: "http://127.0.0.1:\(origin.port)/big?n=\(1 << 30)"))
            #expect(request.send())
            let deadline = Date().addingTimeInterval(20)
            while request.readyState != .LOADING, Date() < deadline { usleep(5_000) }
            #expect(request.readyState == .LOADING)
            request.abort()
            #expect(request.readyState == .UNSENT)
            #expect(request.error?.code == .aborted)
            #expect(request.status == 0)
        }
    }
}
