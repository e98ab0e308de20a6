import Foundation
import Glibc
import RelayCore
import Testing

extension IntegrationSuite {
    /// Real curl authenticating to the real binary with every built-in scheme, through
    /// CONNECT and absolute-form, for success, a wrong password and an unknown user.
    @Suite("proxy auth with curl")
    struct AuthCurlTests {
        static let schemes: [(flag: String, wire: String)] = [
            ("--proxy-basic", "Basic"), ("--proxy-digest", "Digest"), ("--proxy-ntlm", "NTLM"),
        ]
        // Lockout limits above what one test's failures add up to (the lockout has its own test).
        static let authLines = ["auth basic realm=it", "auth digest realm=it", "auth ntlm domain=IT",
                                "auth-lockout failures=100 source-failures=100"]

        /// curl through the relay as `user:password` with `flag`; CONNECT when `tunnel`.
        static func fetch(_ relay: RelayProcess, origin: HTTPOrigin, flag: String, tunnel: Bool,
                          user: String, password: String, extra: [String] = []) throws -> (ProcessResult, String) {
            let dump = relay.directory.path + "/headers-\(UUID().uuidString)"
            let result = try Curl.run((tunnel ? ["-p"] : []) + extra + [
                flag, "-U", "\(user):\(password)", "-x", "http://127.0.0.1:\(relay.proxyPort)", "-D", dump,
                "-w", "%{http_code}", "http://127.0.0.1:\(origin.port)/bytes/1000",
            ])
            return (result, (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "")
        }

        @Test("each scheme, CONNECT and absolute-form: the principal is on the open and close rows")
        func successes() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(Self.authLines, servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            for (flag, wire) in Self.schemes {
                for tunnel in [true, false] {
                    let (result, headers) = try Self.fetch(relay, origin: origin, flag: flag, tunnel: tunnel,
                                                           user: AuthFixtures.user, password: AuthFixtures.password)
                    #expect(result.status == 0, "\(flag) tunnel=\(tunnel): \(result.stderr)\n\(headers)\n\(relay.stderr.suffix(2000))")
                    #expect(result.stdout.count == 1000 + 3, "\(flag) tunnel=\(tunnel): body then the status code")
                    #expect(result.stdoutText.hasSuffix("200"))
                    let event = tunnel ? "tunnel" : "request"
                    let rows = relay.audit.waitForEvents(where: "event = ? AND scheme = ?", ["\(event)-close", wire])
                    #expect(rows.count >= 1, "\(flag) \(event): audit:\n\(relay.audit.dump())")
                    #expect(rows.last?["principal"] == AuthFixtures.user)
                    let opens = relay.audit.waitForEvents(where: "event = ? AND scheme = ? AND principal = ?",
                                                          ["\(event)-open", wire, AuthFixtures.user])
                    #expect(opens.count == rows.count, "one open row per close row, both with the principal")
                }
            }
            #expect(!relay.stderr.contains(AuthFixtures.password), "a password reached the log")
        }

        @Test("wrong password and unknown user: 407, audited with the reason, nothing reached the origin")
        func failures() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(Self.authLines, servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            for (flag, wire) in Self.schemes {
                for tunnel in [true, false] {
                    for (user, password, reason) in [(AuthFixtures.user, "wrong", "bad-password"), ("nobody", "x", "unknown-user")] {
                        let (result, headers) = try Self.fetch(relay, origin: origin, flag: flag, tunnel: tunnel,
                                                               user: user, password: password)
                        #expect(headers.contains("HTTP/1.1 407 Proxy Authentication Required"), "\(flag) \(user): \(headers)")
                        #expect(!result.stdoutText.hasSuffix("200"))
                        // curl sends Digest's userhash when offered: an unknown user's row cannot name
                        // them (that is the point of userhash), a known one's can.
                        let hidden = wire == "Digest" && reason == "unknown-user"
                        let rows = relay.audit.waitForEvents(
                            where: "event = 'refused' AND scheme = ? AND reason = ? AND " + (hidden ? "principal IS NULL" : "principal = ?"),
                            hidden ? [wire, reason] : [wire, reason, try AuthFixtures.recorded(user, reason: reason, in: relay)])
                        #expect(rows.count >= 1, "\(flag) \(user): audit:\n\(relay.audit.dump())")
                        #expect(rows.last?["status"] == "407")
                    }
                }
            }
            #expect(origin.requests.isEmpty, "an unauthenticated request reached the origin")
            #expect(!relay.stderr.contains("wrong"), "a password reached the log")
        }

        @Test("no credentials: one 407 offering every scheme, strongest first, on a kept-alive connection")
        func challenge() throws {
            let relay = try AuthFixtures.relay(Self.authLines, servers: ["server 127.0.0.1:9"])
            defer { relay.stop() }
            let (response, socket) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                                                             "CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
            #expect(response.status == 407)
            let offered = response.headers.filter { $0.name.lowercased() == "proxy-authenticate" }.map(\.value)
            #expect(offered.count == 4, "\(offered)")
            #expect(offered.first == "NTLM")
            #expect(offered.dropFirst().first?.hasPrefix("Digest realm=\"it\", qop=\"auth\", algorithm=SHA-256") == true)
            #expect(offered.dropFirst(2).first?.hasPrefix("Digest realm=\"it\", qop=\"auth\", algorithm=MD5") == true)
            #expect(offered.last == "Basic realm=\"it\", charset=\"UTF-8\"")
            #expect(response.bodyText == "auth-required\n")
            Expect.refusedRow(relay, reason: "auth-required", status: 407)
            // The connection stays open for the next attempt.
            try socket.write("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
            let again = try ProxyClient.readResponse(socket)
            #expect(again.status == 407)
        }

        @Test("openssl s_client -proxy -proxy_user: a TLS session through an authenticated CONNECT")
        func opensslProxyUser() throws {
            let tls = try TLSOrigin()
            defer { tls.stop() }
            // The client CONNECTs to the address but names `localhost` in its hello: `sni=any`
            // keeps this test about proxy auth (the SNI policy has tests of its own).
            let relay = try AuthFixtures.relay(["auth basic realm=it"], servers: ["server 127.0.0.1:\(tls.port) sni=any"])
            defer { relay.stop() }
            let good = try OpenSSLClient.connect(through: relay.proxyPort, to: tls.port, user: AuthFixtures.user,
                                                 password: AuthFixtures.password)
            #expect(good.stdoutText.contains("Server certificate"), "no TLS handshake: \(good.stdoutText.suffix(500)) \(good.stderr)")
            #expect(good.stdoutText.contains(TLSOrigin.greeting), "the server's bytes came through")
            let opens = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND principal = ? AND scheme = 'Basic'", [AuthFixtures.user])
            #expect(opens.count == 1, "audit:\n\(relay.audit.dump())")

            for (user, password, reason) in [(AuthFixtures.user, "wrong", "bad-password"), ("nobody", "x", "unknown-user")] {
                let bad = try OpenSSLClient.connect(through: relay.proxyPort, to: tls.port, user: user, password: password)
                #expect(bad.stdoutText.contains("no peer certificate available"), "\(user): a handshake happened")
                #expect(!bad.stdoutText.contains(TLSOrigin.greeting))
                #expect(relay.audit.waitForEvents(where: "event = 'refused' AND reason = ? AND principal = ?",
                                                  [reason, try AuthFixtures.recorded(user, reason: reason, in: relay)]).count == 1)
            }
        }
    
        @Test("repeated failures lock out the guessing source for that user, not the user's own address")
        func lockout() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth basic realm=it", "auth-lockout failures=3 source-failures=50"],
                                               servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            let attacker = ["--interface", "127.0.0.2"]
            for _ in 0..<3 {
                let (_, headers) = try Self.fetch(relay, origin: origin, flag: "--proxy-basic", tunnel: false,
                                                  user: AuthFixtures.user, password: "guess", extra: attacker)
                #expect(headers.contains("HTTP/1.1 407"), "\(headers)")
            }
            let (_, locked) = try Self.fetch(relay, origin: origin, flag: "--proxy-basic", tunnel: false,
                                             user: AuthFixtures.user, password: AuthFixtures.password, extra: attacker)
            #expect(locked.contains("HTTP/1.1 429 Too Many Requests"), "the right password from the guessing source: \(locked)")
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason = 'locked-out' AND principal = ?", [AuthFixtures.user])
            #expect(rows.count == 1 && rows.first?["status"] == "429", "audit:\n\(relay.audit.dump())")
            #expect(rows.first?["client"]?.hasPrefix("127.0.0.2:") == true)
            let (own, _) = try Self.fetch(relay, origin: origin, flag: "--proxy-basic", tunnel: false,
                                          user: AuthFixtures.user, password: AuthFixtures.password)
            #expect(own.stdoutText.hasSuffix("200"), "alice from her own address is not locked out")
        }

        /// A relay asking for Basic, and one connection to it that proved alice's password with
        /// a forwarded request and is kept alive.
        final class KeptAliveBasicLogin {
            let origin: HTTPOrigin
            let relay: RelayProcess
            let socket: TestSocket
            let request: String

            init() throws {
                origin = try HTTPOrigin()
                relay = try AuthFixtures.relay(["auth basic realm=it"], servers: ["server 127.0.0.1:\(origin.port)"])
                socket = try TestSocket.connect(port: relay.proxyPort)
                let credentials = AuthCrypto.base64Encode(Array("\(AuthFixtures.user):\(AuthFixtures.password)".utf8))
                request = "GET http://127.0.0.1:\(origin.port)/bytes/10 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Proxy-Authorization: Basic \(credentials)\r\n\r\n"
                #expect(try again() == 200)
            }

            deinit {
                socket.close()
                relay.stop()
            }

            /// The same request with the same header on the same connection; the status.
            func again() throws -> Int {
                try socket.write(request)
                return try ProxyClient.readResponse(socket).status
            }
        }

        @Test("dynrelay users passwd ends the login of a kept-alive connection that already proved the old password")
        func passwordChangeReachesKeptAliveConnections() throws {
            let login = try KeptAliveBasicLogin()
            let changed = try RelayBinary.run(["users", "passwd", AuthFixtures.user, "--password-stdin", "--config", login.relay.configPath],
                                              input: .bytes(Array("another-pw\n".utf8)))
            #expect(changed.status == 0, "\(changed.stderr)")
            // The relay notices the store within its check interval (1 s); until then the old
            // login may still pass. Afterwards the same header on the same connection is checked again.
            var status = 200
            let deadline = Date().addingTimeInterval(10)
            while status == 200 && Date() < deadline {
                usleep(200_000)
                status = try login.again()
            }
            #expect(status == 407)
            #expect(login.relay.audit.waitForEvents(where: "event = 'refused' AND reason = 'bad-password' AND principal = ?",
                                                    [AuthFixtures.user]).count == 1, "audit:\n\(login.relay.audit.dump())")
        }

        @Test("a user deleted just before a reload does not live on in a kept-alive connection")
        func deletionThenReloadReachesKeptAliveConnections() throws {
            let login = try KeptAliveBasicLogin()
            let deleted = try RelayBinary.run(["users", "del", AuthFixtures.user, "--config", login.relay.configPath])
            #expect(deleted.status == 0, "\(deleted.stderr)")
            // At once, before the old store's next check: the reload builds a new store.
            kill(login.relay.pid, SIGHUP)
            #expect(ReloadTests.waitForLog(login.relay, "dynrelay: reloaded", count: 1), "stderr:\n\(login.relay.stderr)")
            #expect(try login.again() == 407)
        }

        @Test("max-tunnels-per-principal: the third tunnel of one user is refused with 429, audited; a closed one frees its place")
        func tunnelsPerPrincipal() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth basic realm=it", "max-tunnels-per-principal 2"],
                                               servers: ["server 127.0.0.1:\(origin.port)", "server 127.0.0.1:1"])
            defer { relay.stop() }
            let credentials = AuthCrypto.base64Encode(Array("\(AuthFixtures.user):\(AuthFixtures.password)".utf8))
            func connect(port: UInt16 = origin.port) throws -> (TestSocket, RawResponse) {
                let socket = try TestSocket.connect(port: relay.proxyPort)
                let authority = "127.0.0.1:\(port)"
                try socket.write("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\nProxy-Authorization: Basic \(credentials)\r\n\r\n")
                return (socket, try ProxyClient.readResponse(socket, bodyless: true))
            }
            // Tunnels that never open (nothing listens on port 1) give their places back.
            for _ in 0..<3 {
                let (socket, answer) = try connect(port: 1)
                socket.close()
                #expect(answer.status == 502)
            }
            let (first, firstAnswer) = try connect()
            let (second, secondAnswer) = try connect()
            defer { second.close() }
            #expect(firstAnswer.status == 200 && secondAnswer.status == 200)
            let (third, refused) = try connect()
            third.close()
            #expect(refused.status == 429)
            #expect(refused.bodyText == "tunnel-limit\n")
            #expect(relay.audit.waitForEvents(where: "event = 'refused' AND reason = 'tunnel-limit' AND status = 429 AND principal = ?",
                                              [AuthFixtures.user]).count == 1, "audit:\n\(relay.audit.dump())")
            first.close()
            #expect(relay.audit.waitForEvents(where: "event = 'tunnel-close'", count: 4).count == 4, "three that never opened, then first")
            let (fourth, again) = try connect()
            fourth.close()
            #expect(again.status == 200, "the closed tunnel's place is free again")
        }
    }
}

extension IntegrationSuite {
    /// A password typed into the user-name field is an unknown user name: it must not land
    /// in the trail or the log in clear.
    @Suite("unknown user names")
    struct UnknownUserNameTests {
        @Test("a password typed as the user name is recorded as a stable pseudonym, never in clear")
        func passwordTypedAsTheName() throws {
            let origin = try HTTPOrigin()
            let relay = try AuthFixtures.relay(["auth basic realm=it"], servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            let typed = "Tr0ub4dor&3-correct-horse"
            for _ in 0..<2 {
                let result = try Curl.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:\(relay.proxyPort)",
                                           "--proxy-basic", "-U", "\(typed):x", "http://127.0.0.1:\(origin.port)/"])
                #expect(result.stdoutText == "407")
            }
            let pseudonym = try AuthFixtures.pseudonym(of: typed, in: relay)
            #expect(pseudonym.hasPrefix("unknown:") && pseudonym.count == "unknown:".count + 24, "\(pseudonym)")
            let rows = relay.audit.waitForEvents(where: "reason = 'unknown-user'", count: 2)
            #expect(rows.count == 2)
            #expect(rows.allSatisfy { $0["principal"] == pseudonym }, "the same name, the same pseudonym: \(rows)")
            #expect(try AuthFixtures.pseudonym(of: "someone else", in: relay) != pseudonym)
            relay.stop()
            let dump = try String(contentsOfFile: relay.auditPath, encoding: .isoLatin1)
            #expect(!dump.contains(typed), "the typed name reached the trail")
            #expect(!relay.stderr.contains(typed), "the typed name reached the log")
            #expect(relay.stderr.contains(pseudonym), "the log names the pseudonym")
        }
    }
}
