import Foundation
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// `RelayHTTPClient` against the real binary and a scripted Python origin: absolute-form
    /// for `http://`, CONNECT and end-to-end TLS for `https://`, kept-alive tunnels, each
    /// body framing, and bad input from the origin.
    @Suite("HTTP client")
    struct HTTPClientTests {
        static let transport = ClientTransportOptions(connectTimeout: .seconds(10), tlsHandshakeTimeout: .seconds(10),
                                                      idleTimeout: .seconds(15))

        /// A relay registering the origin by address and as `localhost` (the TLS name).
        static func relay(_ port: UInt16, auth: [String] = []) throws -> RelayProcess {
            try AuthFixtures.relay(auth + ["auth-lockout failures=100 source-failures=100"],
                                   servers: ["server 127.0.0.1:\(port)", "server localhost:\(port)"])
        }

        static func client(_ relay: RelayProcess, caFile: String? = nil, proxy: ClientCredentials? = nil,
                           server: ClientCredentials? = nil) throws -> RelayHTTPClient {
            let endpoint = RelayEndpoint(url: try ClientURL(parsing: "http://127.0.0.1:\(relay.proxyPort)"), priority: 1)
            return RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
                relays: [endpoint], proxyCredentials: proxy, serverCredentials: server,
                tls: ClientTLSOptions(caFile: caFile), transport: transport))
        }

        static func text(_ response: RelayHTTPResponse) async throws(RelayHTTPError) -> String {
            String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)
        }

        /// The error `body` ends with, or nil when it succeeds.
        static func failure(_ body: () async throws -> Void) async -> RelayHTTPError? {
            do {
                try await body()
                return nil
            } catch let error as RelayHTTPError {
                return error
            } catch {
                return RelayHTTPError(.invalidRequest, "not a RelayHTTPError: \(error)")
            }
        }

        static func expectError(_ code: RelayHTTPError.Code, sourceLocation: Testing.SourceLocation = #_sourceLocation,
                                _ body: () async throws -> Void) async {
            let error = await failure(body)
            #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
        }

        @Test("absolute-form: Content-Length, chunked and close-delimited bodies")
        func plainBodies() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relay)
            let base = "http://127.0.0.1:\(origin.port)"

            let hello = try await client.execute("GET", base + "/hello")
            #expect(hello.status == 200)
            #expect(try await Self.text(hello).hasPrefix("conn "))
            let chunked = try await client.execute("GET", base + "/chunked")
            #expect(try await Self.text(chunked) == "abcdefg")
            let closing = try await client.execute("GET", base + "/close")
            #expect(try await Self.text(closing) == "until the end")
            let upload = try await client.execute("POST", base + "/upload", body: Array(repeating: 7, count: 100_000))
            #expect(try await Self.text(upload) == "POST 100000")
            let rows = relay.audit.waitForEvents(where: "event = 'request-close'", count: 4)
            #expect(rows.count >= 4, "\(relay.audit.dump())")
        }

        @Test("https through CONNECT: verified TLS, and the tunnel is kept alive for the next request")
        func tunnelKeepAlive() async throws {
            let origin = try TLSScriptedOrigin()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relay, caFile: origin.caFile)
            let url = "https://localhost:\(origin.port)/hello"

            let first = try await Self.text(try await client.execute("GET", url))
            let second = try await Self.text(try await client.execute("GET", url))
            let connection = first.split(separator: " ").dropFirst().first
            #expect(first.hasSuffix("req 1"), "\(first)")
            #expect(second == "conn \(connection ?? "?") req 2", "the second request rode the same tunnel: \(first) / \(second)")
            #expect(relay.audit.waitForEvents(where: "event = 'tunnel-open'").count == 1, "\(relay.audit.dump())")

            let untrusting = try Self.client(relay)
            let error = await Self.failure { _ = try await untrusting.execute("GET", url) }
            #expect(error?.code == .transport, "a certificate from an unknown CA was refused: \(String(describing: error))")
            #expect(error?.transport?.code == .tlsCertUntrusted)
        }

        @Test("bad input from the origin: bad chunk size, reset mid-body, Content-Length shorter than the body")
        func badOrigin() async throws {
            let origin = try TLSScriptedOrigin()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relay, caFile: origin.caFile)
            let base = "https://localhost:\(origin.port)"

            await Self.expectError(.badChunk) { _ = try await Self.text(try await client.execute("GET", base + "/badchunk")) }
            await Self.expectError(.truncatedBody) { _ = try await Self.text(try await client.execute("GET", base + "/reset")) }
            let short = try await client.execute("GET", base + "/short")
            #expect(try await Self.text(short) == "hello")
            // The forged response behind the short body must not answer the next request.
            let next = try await Self.text(try await client.execute("GET", base + "/hello"))
            #expect(next.hasPrefix("conn ") && next.hasSuffix("req 1"), "a new connection answered: \(next)")
        }

        @Test("cookies: stored for the origin only, never for another domain or a public suffix")
        func cookies() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relay)
            let base = "http://127.0.0.1:\(origin.port)"
            _ = try await Self.text(try await client.execute("GET", base + "/setcookie"))
            #expect(client.cookies.map(\.name) == ["mine"])
            #expect(try await Self.text(try await client.execute("GET", base + "/cookie")) == "mine=1")
        }

        @Test("redirects: followed, with Authorization kept on the origin and dropped for another")
        func redirects() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let client = try Self.client(relay)
            let base = "http://127.0.0.1:\(origin.port)"
            let secret = [("Authorization", "Bearer secret")]

            let same = try await client.execute("GET", base + "/redirect?to=/echo-auth", headers: secret)
            #expect(same.status == 200)
            #expect(try await Self.text(same) == "Bearer secret")
            let other = try await client.execute("GET", base + "/redirect?to=http://localhost:\(origin.port)/echo-auth",
                                                 headers: secret)
            #expect(other.url.authority == "localhost:\(origin.port)")
            #expect(try await Self.text(other) == "none", "the credential did not follow to another origin")
            await Self.expectError(.redirectFailed) {
                _ = try await client.execute("GET", base + "/loop")
            }
        }

        @Test("401 Basic from the server answered, and a wrong password ends in server-auth-failed")
        func serverBasic() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try Self.relay(origin.port)
            defer { relay.stop() }
            let url = "http://127.0.0.1:\(origin.port)/basic"
            let good = try Self.client(relay, server: ClientCredentials(user: ScriptedHTTPOrigin.basicUser,
                                                                        password: ScriptedHTTPOrigin.basicPassword))
            #expect(try await Self.text(try await good.execute("GET", url)) == "welcome bob")
            let bad = try Self.client(relay, server: ClientCredentials(user: "bob", password: "nope"))
            await Self.expectError(.serverAuthFailed) { _ = try await bad.execute("GET", url) }
        }

        @Test("407 from the relay answered with each scheme, absolute-form and CONNECT; a wrong password fails typed")
        func proxyAuth() async throws {
            let origin = try TLSScriptedOrigin()
            defer { origin.stop() }
            let credentials = ClientCredentials(user: AuthFixtures.user, password: AuthFixtures.password)
            for scheme in ["auth basic realm=it", "auth digest realm=it", "auth ntlm domain=IT"] {
                let relay = try Self.relay(origin.port, auth: [scheme])
                defer { relay.stop() }
                let client = try Self.client(relay, caFile: origin.caFile, proxy: credentials)
                for url in ["http://127.0.0.1:\(origin.port)/hello", "https://localhost:\(origin.port)/hello"] {
                    let response = try await client.execute("GET", url)
                    #expect(response.status == 200, "\(scheme) \(url)")
                    #expect(try await Self.text(response).hasPrefix("conn "), "\(scheme) \(url)")
                    // A second request on the kept-alive connection still passes.
                    #expect(try await client.execute("GET", url).status == 200, "\(scheme) \(url) again")
                }
                let wrong = try Self.client(relay, caFile: origin.caFile,
                                            proxy: ClientCredentials(user: AuthFixtures.user, password: "wrong"))
                for url in ["http://127.0.0.1:\(origin.port)/hello", "https://localhost:\(origin.port)/hello"] {
                    await Self.expectError(.proxyAuthFailed) { _ = try await wrong.execute("GET", url) }
                }
                let none = try Self.client(relay, caFile: origin.caFile)
                await Self.expectError(.proxyAuthFailed) { _ = try await none.execute("GET", "http://127.0.0.1:\(origin.port)/hello") }
            }
        }
    }
}
