import Foundation
import Glibc
import KerberosTestSupport
import Testing

extension IntegrationSuite {
    /// Identity from the enterprise directory: Kerberos through a keytab with a real MIT KDC
    /// and `curl --proxy-negotiate`, and Squid's own helpers from Debian's squid package.
    @Suite("proxy auth from the directory")
    struct AuthDirectoryTests {
        static let squid = "/usr/lib/squid/"

        /// curl through `relay`; returns the proxy's refusal of a CONNECT, else the origin's status.
        static func curl(_ relay: RelayProcess, _ origin: HTTPOrigin, _ flags: [String], tunnel: Bool,
                         environment: [String: String] = [:]) throws -> String {
            let result = try Curl.run((tunnel ? ["-p"] : []) + flags + [
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}",
                "http://127.0.0.1:\(origin.port)/bytes/100",
            ], environment: environment)
            let codes = result.stdoutText.split(separator: " ").map(String.init)
            guard codes.count == 2 else { return result.stdoutText }
            return tunnel && codes[0] != "200" ? codes[0] : codes[1]
        }

        static func principals(_ relay: RelayProcess, scheme: String) -> [String] {
            relay.audit.waitForEvents(where: "event LIKE '%-open' AND scheme = ?", [scheme]).compactMap { $0["principal"] }
        }

        @Test("Negotiate with the relay's keytab: curl --proxy-negotiate, CONNECT and absolute-form; garbage is a gss-error")
        func negotiateWithKeytab() throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth negotiate keytab=\(kdc.keytabPath) principal=\(TestKDC.servicePrincipal)",
                "server 127.0.0.1:\(origin.port)",
            ]), environment: kdc.environment)
            defer { relay.stop() }
            for tunnel in [true, false] {
                #expect(try Self.curl(relay, origin, ["--proxy-negotiate", "-U", ":"], tunnel: tunnel,
                                      environment: kdc.environment) == "200", "tunnel=\(tunnel): \(relay.stderr.suffix(1500))")
            }
            #expect(Self.principals(relay, scheme: "Negotiate") == [TestKDC.userPrincipal, TestKDC.userPrincipal])

            // No ticket: curl has nothing to offer and gets the 407.
            let empty = ["KRB5CCNAME": "FILE:" + relay.directory.path + "/no-ccache"]
            #expect(try Self.curl(relay, origin, ["--proxy-negotiate", "-U", ":"], tunnel: true,
                                  environment: kdc.environment.merging(empty) { _, new in new }) == "407")

            let (response, _) = try ProxyClient.exchange(relayPort: relay.proxyPort,
                "CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nProxy-Authorization: Negotiate YWJjZGVmZ2hpamts\r\n\r\n")
            #expect(response.status == 407)
            let rows = relay.audit.waitForEvents(where: "event = 'refused' AND reason LIKE 'gss-error: %'", [])
            #expect(rows.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(relay.isAlive)
        }

        @Test("basic_ncsa_auth: right, wrong and unknown through CONNECT and absolute-form")
        func basicHelper() throws {
            let origin = try HTTPOrigin()
            let hash = try Subprocess.run("/usr/bin/openssl", ["passwd", "-apr1", "open sesame"]).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth basic realm=it",
                "auth-helper basic children=2 \(Self.squid)basic_ncsa_auth {DIR}/htpasswd",
                "auth-lockout failures=100 source-failures=100",
                "server 127.0.0.1:\(origin.port)",
            ]), files: ["htpasswd": "carol:\(hash)\n"])
            defer { relay.stop() }
            for tunnel in [true, false] {
                #expect(try Self.curl(relay, origin, ["--proxy-basic", "-U", "carol:open sesame"], tunnel: tunnel) == "200")
                #expect(try Self.curl(relay, origin, ["--proxy-basic", "-U", "carol:nope"], tunnel: tunnel) == "407")
                #expect(try Self.curl(relay, origin, ["--proxy-basic", "-U", "dave:x"], tunnel: tunnel) == "407")
            }
            #expect(Self.principals(relay, scheme: "Basic") == ["carol", "carol"])
            // A helper cannot say whether a refused name is an account: it is recorded as its
            // pseudonym, as an unknown one is.
            #expect(relay.audit.waitForEvents(where: "reason = 'bad-password' AND principal = ?",
                                              [try AuthFixtures.pseudonym(of: "carol", in: relay)], count: 2).count == 2)
            #expect(relay.audit.waitForEvents(where: "reason = 'unknown-user' AND principal = ?",
                                              [try AuthFixtures.pseudonym(of: "dave", in: relay)], count: 2).count == 2)
        }

        @Test("digest_file_auth gives the HA1, the relay checks the response")
        func digestHelper() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth digest realm=it algorithm=MD5",
                "auth-helper digest concurrency=4 \(Self.squid)digest_file_auth {DIR}/digest",
                "auth-lockout failures=100 source-failures=100",
                "server 127.0.0.1:\(origin.port)",
            ]), files: ["digest": "erin:pa55word\n"])
            defer { relay.stop() }
            for tunnel in [true, false] {
                #expect(try Self.curl(relay, origin, ["--proxy-digest", "-U", "erin:pa55word"], tunnel: tunnel) == "200",
                        "\(relay.stderr.suffix(1500))")
                #expect(try Self.curl(relay, origin, ["--proxy-digest", "-U", "erin:wrong"], tunnel: tunnel) == "407")
            }
            #expect(Self.principals(relay, scheme: "Digest") == ["erin", "erin"])
        }

        @Test("ntlm_fake_auth and negotiate_kerberos_auth: stateful helpers hold one handshake per connection")
        func statefulHelpers() throws {
            let kdc = try TestKDC()
            defer { kdc.stop() }
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth ntlm",
                "auth-helper ntlm children=2 \(Self.squid)ntlm_fake_auth",
                "auth negotiate",
                "auth-helper negotiate children=2 \(Self.squid)negotiate_kerberos_auth -s GSS_C_NO_NAME -k \(kdc.keytabPath)",
                "server 127.0.0.1:\(origin.port)",
            ]), environment: kdc.environment)
            defer { relay.stop() }
            for tunnel in [true, false] {
                #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "frank:anything"], tunnel: tunnel) == "200",
                        "\(relay.stderr.suffix(1500))")
                #expect(try Self.curl(relay, origin, ["--proxy-negotiate", "-U", ":"], tunnel: tunnel,
                                      environment: kdc.environment) == "200", "\(relay.stderr.suffix(1500))")
            }
            #expect(Self.principals(relay, scheme: "NTLM").count == 2)
            // The principal is whatever the helper answers; ntlm_fake_auth garbles curl's names
            // around the edges (it decodes them as OEM), so only the core is checked.
            #expect(Self.principals(relay, scheme: "NTLM").allSatisfy { $0.contains("frank") }, "\(Self.principals(relay, scheme: "NTLM"))")
            #expect(Self.principals(relay, scheme: "Negotiate") == [TestKDC.userPrincipal, TestKDC.userPrincipal])
        }

        @Test("Samba's ntlm_auth with a private winbindd: right, wrong and unknown through CONNECT and absolute-form; the claimed name locks out",
              .enabled(if: TestWinbind.missingPrerequisite == nil, Comment(rawValue: TestWinbind.missingPrerequisite ?? "")))
        func sambaNTLMAuth() throws {
            let samba = try TestWinbind()
            defer { samba.stop() }
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth ntlm",
                "auth-helper ntlm children=2 " + samba.helperCommand().joined(separator: " "),
                "auth-lockout failures=3 source-failures=100",
                "server 127.0.0.1:\(origin.port)",
            ]))
            defer { relay.stop() }
            let (grace, spaced) = (TestWinbind.users[0], TestWinbind.users[1])
            for tunnel in [true, false] {
                for user in [grace, spaced] {
                    #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "\(user.name):\(user.password)"], tunnel: tunnel) == "200",
                            "tunnel=\(tunnel) \(user.name): \(relay.stderr.suffix(1500))\n\(samba.logs.suffix(1500))")
                }
                #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "grace:\(grace.password)x"], tunnel: tunnel) == "407")
                #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "mallory:\(grace.password)"], tunnel: tunnel) == "407")
            }
            // The principal is ntlm_auth's `AF DOMAIN\user`, the whole rest of the line.
            let granted = [grace, spaced].map { TestWinbind.domain + "\\" + $0.name }
            #expect(Self.principals(relay, scheme: "NTLM") == granted + granted)
            // Samba answers NT_STATUS_LOGON_FAILURE for a wrong password and an unknown user
            // alike; the refusal names the name the client claimed, as its pseudonym (the
            // helper cannot say whether it is an account or a password typed as a name).
            let refused = "event = 'refused' AND scheme = 'NTLM' AND reason = 'bad-password: NT_STATUS_LOGON_FAILURE' AND principal = ?"
            let graceRecorded = try AuthFixtures.pseudonym(of: "grace", in: relay)
            #expect(relay.audit.waitForEvents(where: refused, [graceRecorded], count: 2).count == 2, "audit:\n\(relay.audit.dump())")
            #expect(relay.audit.waitForEvents(where: refused, [try AuthFixtures.pseudonym(of: "mallory", in: relay)], count: 2).count == 2,
                    "audit:\n\(relay.audit.dump())")

            // A third failure locks grace out: the right password is refused before the helper hears it.
            #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "grace:wrong"], tunnel: true) == "407")
            #expect(try Self.curl(relay, origin, ["--proxy-ntlm", "-U", "grace:\(grace.password)"], tunnel: true) == "429")
            #expect(relay.audit.waitForEvents(where: "reason = 'locked-out' AND principal = ? AND scheme = 'NTLM'", [graceRecorded]).count == 1,
                    "audit:\n\(relay.audit.dump())")
            #expect(relay.isAlive)
        }

        /// CONNECT with Negotiate tokens from `client` on one connection; the final answer.
        static func spnegoConnect(_ relay: RelayProcess, _ origin: HTTPOrigin, _ client: TestWinbind.SPNEGOClient) throws -> RawResponse {
            let socket = try TestSocket.connect(port: relay.proxyPort)
            defer { socket.close() }
            let authority = "127.0.0.1:\(origin.port)"
            func send(_ token: String) throws -> RawResponse {
                try socket.write("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\nProxy-Authorization: Negotiate \(token)\r\n\r\n")
                return try ProxyClient.readResponse(socket, bodyless: true)
            }
            let challenge = try send(try client.first())
            guard challenge.status == 407, let header = challenge.header("proxy-authenticate"), header.hasPrefix("Negotiate ") else {
                return challenge
            }
            return try send(try client.answer(String(header.dropFirst("Negotiate ".count))))
        }

        @Test("Samba's ntlm_auth as a Negotiate helper: NTLM inside SPNEGO from Samba's client; the name inside locks out",
              .enabled(if: TestWinbind.missingPrerequisite == nil, Comment(rawValue: TestWinbind.missingPrerequisite ?? "")))
        func sambaSPNEGO() throws {
            let samba = try TestWinbind()
            defer { samba.stop() }
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy([
                "auth negotiate",
                "auth-helper negotiate children=2 " + samba.helperCommand(protocol: "gss-spnego").joined(separator: " "),
                "auth-lockout failures=3 source-failures=100",
                "server 127.0.0.1:\(origin.port)",
            ]))
            defer { relay.stop() }
            let grace = TestWinbind.users[0]
            let right = samba.spnegoClient(user: grace.name, password: grace.password)
            let wrong = samba.spnegoClient(user: grace.name, password: grace.password + "x")
            #expect(try Self.spnegoConnect(relay, origin, right).status == 200, "\(relay.stderr.suffix(1500))\n\(samba.logs.suffix(1500))")
            #expect(Self.principals(relay, scheme: "Negotiate") == [TestWinbind.domain + "\\" + grace.name])
            for _ in 0..<3 {
                #expect(try Self.spnegoConnect(relay, origin, wrong).status == 407)
            }
            // The helper never says whose token failed; the AUTHENTICATE inside SPNEGO did.
            let graceRecorded = try AuthFixtures.pseudonym(of: "grace", in: relay)
            let refused = "event = 'refused' AND scheme = 'Negotiate' AND reason LIKE 'gss-error%' AND principal = ?"
            #expect(relay.audit.waitForEvents(where: refused, [graceRecorded], count: 3).count == 3, "audit:\n\(relay.audit.dump())")
            let locked = try Self.spnegoConnect(relay, origin, right)
            #expect(locked.status == 429, "\(locked.statusLine)")
            #expect(relay.audit.waitForEvents(where: "reason = 'locked-out' AND principal = ? AND scheme = 'Negotiate'", [graceRecorded]).count == 1,
                    "audit:\n\(relay.audit.dump())")
            #expect(relay.isAlive)
        }
    }
}
