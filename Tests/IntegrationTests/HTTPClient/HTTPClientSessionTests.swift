import Foundation
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// What lasts between requests: Digest to the server, kept-alive connections the server
    /// closed while idle, cookies persisted to a file.
    @Suite("HTTP client sessions")
    struct HTTPClientSessionTests {
        @Test("401 Digest from the server: SHA-256 chosen over MD5, MD5 when alone, a wrong password refused")
        func serverDigest() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let credentials = ClientCredentials(user: ScriptedHTTPOrigin.basicUser, password: ScriptedHTTPOrigin.basicPassword)
            for url in ["http://127.0.0.1:\(origin.port)/digest", "http://127.0.0.1:\(origin.port)/digest-md5"] {
                let client = try HTTPClientTests.client(relay, server: credentials)
                #expect(try await HTTPClientTests.text(try await client.execute("GET", url)) == "welcome digest bob")
                #expect(try await HTTPClientTests.text(try await client.execute("GET", url)) == "welcome digest bob")
            }
            let wrong = try HTTPClientTests.client(relay, server: ClientCredentials(user: "bob", password: "wrong"))
            await HTTPClientTests.expectError(.serverAuthFailed) {
                _ = try await wrong.execute("GET", "http://127.0.0.1:\(origin.port)/digest")
            }
        }

        @Test("a kept-alive tunnel the server closed while idle is not reused")
        func serverClosedIdle() async throws {
            let origin = try TLSScriptedOrigin()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let client = try HTTPClientTests.client(relay, caFile: origin.caFile)
            let base = "https://localhost:\(origin.port)"
            let first = try await HTTPClientTests.text(try await client.execute("GET", base + "/bye"))
            #expect(first.hasSuffix("req 1"))
            // The server closes 0.2 s after answering; POST is not idempotent, so a stale
            // connection could not be retried: the close must be seen before reuse.
            try await Task.sleep(for: .seconds(1))
            let second = try await client.execute("POST", base + "/upload", body: Array("abc".utf8))
            #expect(try await HTTPClientTests.text(second) == "POST 3")
            #expect(relay.audit.waitForEvents(where: "event = 'tunnel-open'", count: 2).count == 2)
        }

        @Test("cookies persisted to a Netscape file and sent by the next client")
        func persistedCookies() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let file = relay.directory.path + "/cookies.txt"
            let endpoint = RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\(relay.proxyPort)"), priority: 1)
            let configuration = RelayHTTPClientConfiguration(relays: [endpoint], transport: HTTPClientTests.transport,
                                                             cookieFile: file)
            let base = "http://127.0.0.1:\(origin.port)"
            _ = try await HTTPClientTests.text(try await RelayHTTPClient(configuration: configuration).execute("GET", base + "/setcookie"))
            let saved = try String(contentsOfFile: file, encoding: .utf8)
            #expect(saved.contains("\tmine\t1"), "\(saved)")
            #expect(!saved.contains("other") && !saved.contains("suffix"))
            let next = RelayHTTPClient(configuration: configuration)
            #expect(try await HTTPClientTests.text(try await next.execute("GET", base + "/cookie")) == "mine=1")
        }
    }
}
