import Synchronization
import Testing
@testable import RelayCore

/// The session's side of proxy authentication: nothing is decided or contacted before a
/// principal, 407s keep the connection for the next attempt, and principals reach the audit.
@Suite struct ProxySessionAuthTests {
    static func session() throws -> ProxySession {
        var settings = try ProxySessionTests.settings()
        settings.requiresAuth = true
        return ProxySession(settings: settings)
    }

    static let alice = AuthPrincipal(name: "alice", scheme: "Basic")
    static let challenge = ProxyAuthRefusal(reason: .authRequired, challenges: ["Basic realm=\"r\""])

    static func authRequests(_ actions: [ProxySessionAction]) -> [ProxyAuthRequest] {
        actions.compactMap { if case .authenticate(let request) = $0 { return request } else { return nil } }
    }

    /// Sends `request` (to a literal address), grants it to `principal` and runs it to a
    /// `204` on a kept-alive upstream.
    static func complete(_ session: inout ProxySession, _ request: String, grantedTo principal: AuthPrincipal,
                         scope: AuthScope) {
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        _ = session.handle(.authFinished(.granted(principal, scope: scope)), now: 2)
        _ = session.handle(.upstreamConnected, now: 2)
        _ = session.handle(.auditCommitted, now: 2)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test func theRegistryIsNotConsultedBeforeAuthenticationEvenForUnregisteredTargets() throws {
        var session = try Self.session()
        let head = ProxySessionTests.bytes("CONNECT unregistered.example:443 HTTP/1.1\r\nHost: unregistered.example:443\r\n\r\n")
        for split in 0...head.count {
            var fresh = session
            let actions = ProxySessionTests.feed(&fresh, head, splitAt: [split])
            #expect(Self.authRequests(actions) == [ProxyAuthRequest(authorization: nil, method: "CONNECT",
                                                                    target: "unregistered.example:443")], "split \(split)")
            #expect(ProxySessionTests.auditEntries(actions).isEmpty)
            #expect(!fresh.wantsClientBytes)
        }
        _ = ProxySessionTests.feed(&session, head)
        let refused = session.handle(.authFinished(.refused(Self.challenge)), now: 2_000_000)
        let response = ProxySessionTests.refusalBody(refused) ?? ""
        #expect(response.hasPrefix("HTTP/1.1 407 Proxy Authentication Required\r\n"))
        #expect(response.contains("\r\nProxy-Authenticate: Basic realm=\"r\"\r\n"))
        #expect(response.hasSuffix("\r\n\r\nauth-required\n"))
        #expect(!response.contains("Connection: close"))
        let rows = ProxySessionTests.auditEntries(refused)
        #expect(rows.map(\.reason) == [.authRequired])
        #expect(rows.first?.status == 407)
        #expect(rows.first?.target == "unregistered.example:443")
        #expect(!refused.contains(.closeClient))
        #expect(session.wantsClientBytes, "a 407 keeps the connection for the next attempt")
    }

    @Test func aGrantedPrincipalIsDecidedAndAuditedOnOpenAndOnTheTunnel() throws {
        var session = try Self.session()
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(
            "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n"))
        #expect(Self.authRequests(actions).first?.authorization == "Basic YWxpY2U6cHc=")
        let granted = session.handle(.authFinished(.granted(Self.alice, scope: .sameCredentials)), now: 2_000_000)
        let open = ProxySessionTests.auditEntries(granted).first
        #expect(open?.event == .tunnelOpen)
        #expect(open?.principal == "alice")
        #expect(open?.scheme == "Basic")
        _ = session.handle(.upstreamConnected, now: 2_000_000)
        let started = session.handle(.auditCommitted, now: 2_000_000)
        guard case .startTunnel(let tunnel, _, _)? = started.first(where: { if case .startTunnel = $0 { true } else { false } }) else {
            Issue.record("no tunnel: \(started)")
            return
        }
        #expect(tunnel.principal == Self.alice)
    }

    @Test func anUnregisteredTargetIsRefusedOnlyAfterAuthenticationWithThePrincipal() throws {
        var session = try Self.session()
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT nowhere.example:443 HTTP/1.1\r\nHost: nowhere.example:443\r\nProxy-Authorization: Basic eA==\r\n\r\n"))
        let actions = session.handle(.authFinished(.granted(Self.alice, scope: .request)), now: 2_000_000)
        let row = ProxySessionTests.auditEntries(actions).first
        #expect(row?.reason == .notRegistered)
        #expect(row?.principal == "alice")
        #expect(ProxySessionTests.refusalBody(actions)?.hasPrefix("HTTP/1.1 403") == true)
    }

    @Test func basicCredentialsVerifiedOnceAreReusedOnTheConnectionButNewOnesAreChecked() throws {
        var session = try Self.session()
        let request = "GET http://app.corp.example/x HTTP/1.1\r\nHost: app.corp.example\r\nProxy-Authorization: Basic QQ==\r\n\r\n"
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        _ = session.handle(.authFinished(.granted(Self.alice, scope: .sameCredentials)), now: 2_000_000)
        _ = session.handle(.resolved([.v4(IPv4Address(10, 0, 0, 1))]), now: 2_000_000)
        _ = session.handle(.upstreamConnected, now: 2_000_000)
        _ = session.handle(.auditCommitted, now: 2_000_000)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 204 No Content\r\n\r\n")
        let second = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        #expect(Self.authRequests(second).isEmpty, "same header on the same connection: no second KDF")
        #expect(ProxySessionTests.auditEntries(second).first?.principal == "alice")
    }

    /// A changed user store (or auth configuration) makes the driver call
    /// `forgetAuthentication`: the same header is then checked again.
    @Test func forgottenCredentialsAreCheckedAgain() throws {
        var session = try Self.session()
        let request = "GET http://10.9.1.1/x HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic QQ==\r\n\r\n"
        Self.complete(&session, request, grantedTo: Self.alice, scope: .sameCredentials)
        #expect(session.remembersAuthentication)
        session.forgetAuthentication()
        #expect(!session.remembersAuthentication)
        let again = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        #expect(Self.authRequests(again).count == 1)
    }

    /// A proof is trusted only under the credentials version it was made under: after a
    /// change to the user store the same header (or NTLM connection) proves itself again,
    /// however the next request's bytes arrive (here pipelined, its first byte in the same
    /// read as the previous request).
    @Test func aProofFromAnotherCredentialsVersionIsMadeAgain() throws {
        let version = Atomic<UInt64>(7)
        var settings = try ProxySessionTests.settings()
        settings.requiresAuth = true
        settings.credentialsVersion = { version.load(ordering: .relaxed) }
        let request = "GET http://10.9.1.1/x HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic QQ==\r\n\r\n"
        var session = ProxySession(settings: settings)
        Self.complete(&session, request + "G", grantedTo: Self.alice, scope: .sameCredentials)
        let second = ProxySessionTests.feed(&session, ProxySessionTests.bytes(String(request.dropFirst())))
        #expect(Self.authRequests(second).isEmpty, "same version: the remembered proof holds")
        _ = session.handle(.auditCommitted, now: 3)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 204 No Content\r\n\r\n")
        version.store(8, ordering: .relaxed)
        let third = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        #expect(Self.authRequests(third).count == 1, "another version: proved again")
        #expect(!session.remembersAuthentication)
    }

    /// After a refused attempt the connection has proved nothing: an NTLM principal does not
    /// survive a failed Basic login (or a new handshake) on its connection, and the next
    /// attempt is due within the header timeout.
    @Test func aRefusedAttemptForgetsTheConnectionsPrincipalAndRestartsTheHeaderTimer() throws {
        var session = try Self.session()
        Self.complete(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: NTLM dHlwZTM=\r\n\r\n",
                      grantedTo: AuthPrincipal(name: "bob", scheme: "NTLM"), scope: .connection)
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
        let refused = session.handle(.authFinished(.refused(ProxyAuthRefusal(reason: .badPassword, claimedPrincipal: "carol",
                                                                             scheme: "Basic", challenges: ["Basic realm=\"r\""]))), now: 3)
        #expect(refused.contains(.startHeaderTimer), "the retry is due within the header timeout")
        #expect(!refused.contains(.closeClient))
        let later = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.9.1.1/2 HTTP/1.1\r\nHost: 10.9.1.1\r\n\r\n"))
        #expect(Self.authRequests(later).count == 1, "bob's NTLM login did not survive the failed attempt")
    }

    /// The 407 body does not tell a wrong password from an unknown account; the audit does.
    @Test func wrongPasswordAndUnknownUserLookAlikeOnTheWire() throws {
        var bodies: [String] = []
        for reason in [ReasonCode.badPassword, .unknownUser] {
            var session = try Self.session()
            _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
            let actions = session.handle(.authFinished(.refused(ProxyAuthRefusal(reason: reason, claimedPrincipal: "x", scheme: "Basic",
                                                                                 challenges: ["Basic realm=\"r\""]))), now: 2)
            bodies.append(try #require(ProxySessionTests.refusalBody(actions)))
            #expect(ProxySessionTests.auditEntries(actions).first?.reason == reason)
        }
        #expect(bodies[0] == bodies[1])
        #expect(bodies[0].hasSuffix("\r\n\r\nauth-failed\n"))
    }

    /// A name not known to be an account may be a password typed in the wrong field: its row
    /// records the settings' pseudonym, whatever the reason; an account's name stays readable.
    @Test func aNameNotKnownAsAnAccountIsRecordedAsItsPseudonym() throws {
        for (reason, isAccount, recorded) in [(ReasonCode.unknownUser, false, "unknown:of(hunter2)"),
                                              (.badPassword, false, "unknown:of(hunter2)"),
                                              (.tooManyAttempts, false, "unknown:of(hunter2)"),
                                              (.badPassword, true, "hunter2"), (.lockedOut, true, "hunter2")] {
            var settings = try ProxySessionTests.settings()
            settings.requiresAuth = true
            settings.unknownNamePseudonym = { "unknown:of(\($0))" }
            var session = ProxySession(settings: settings)
            _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
            var refusal = ProxyAuthRefusal(reason: reason, claimedPrincipal: "hunter2", scheme: "Basic",
                                           challenges: ["Basic realm=\"r\""])
            refusal.claimedIsAccount = isAccount
            let actions = session.handle(.authFinished(.refused(refusal)), now: 2)
            #expect(ProxySessionTests.auditEntries(actions).first?.principal == recorded, "\(reason) \(isAccount)")
        }
    }

    /// A kept-alive upstream connection is not handed to another principal: the origin may
    /// have tied it to the first one (NTLM to IIS authenticates the connection).
    @Test func anotherPrincipalGetsItsOwnUpstreamConnection() throws {
        var session = try Self.session()
        Self.complete(&session, "GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic QQ==\r\n\r\n",
                      grantedTo: Self.alice, scope: .request)
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic Qg==\r\n\r\n"))
        let bob = session.handle(.authFinished(.granted(AuthPrincipal(name: "bob", scheme: "Basic"), scope: .request)), now: 3)
        #expect(bob.contains(.closeUpstream))
        #expect(bob.contains { if case .connect = $0 { return true } else { return false } })
        _ = session.handle(.upstreamConnected, now: 3)
        _ = session.handle(.auditCommitted, now: 3)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 204 No Content\r\n\r\n")
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic Qg==\r\n\r\n"))
        let bobAgain = session.handle(.authFinished(.granted(AuthPrincipal(name: "bob", scheme: "Basic"), scope: .request)), now: 4)
        #expect(!bobAgain.contains { if case .connect = $0 { return true } else { return false } }, "bob's own link is reused")
    }

    /// A CONNECT takes one of its principal's places before anything upstream is contacted;
    /// past the limit it is refused (429, audited with the principal). The place goes to
    /// the driver with the tunnel; forwarded requests take none.
    @Test func tunnelsPerPrincipalAreCapped() throws {
        let quota = TunnelQuota(limit: 1)
        var settings = try ProxySessionTests.settings()
        settings.requiresAuth = true
        settings.tunnelQuota = quota
        func connect(_ principal: AuthPrincipal) -> (ProxySession, [ProxySessionAction]) {
            var session = ProxySession(settings: settings)
            _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.9.1.1:443 HTTP/1.1\r\nHost: 10.9.1.1:443\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
            let actions = session.handle(.authFinished(.granted(principal, scope: .sameCredentials)), now: 2)
            return (session, actions)
        }
        let opened = connect(Self.alice)
        var first = opened.0
        #expect(opened.1.contains { if case .connect = $0 { return true } else { return false } })
        #expect(quota.openCount(NTLMUserName.comparisonKey("alice")) == 1)
        let (_, second) = connect(Self.alice)
        #expect(!second.contains { if case .connect = $0 { return true } else { return false } })
        let row = ProxySessionTests.auditEntries(second).first
        #expect(row?.reason == .tunnelLimit && row?.principal == "alice" && row?.status == 429)
        #expect(ProxySessionTests.refusalBody(second)?.hasPrefix("HTTP/1.1 429 ") == true)
        let (_, shouting) = connect(AuthPrincipal(name: "ALICE", scheme: "Basic"))
        #expect(ProxySessionTests.auditEntries(shouting).first?.reason == .tunnelLimit, "one count for every spelling")
        let (_, bob) = connect(AuthPrincipal(name: "bob", scheme: "Basic"))
        #expect(bob.contains { if case .connect = $0 { return true } else { return false } }, "another principal has its own places")

        var forward = ProxySession(settings: settings)
        _ = ProxySessionTests.feed(&forward, ProxySessionTests.bytes("GET http://10.9.1.1/ HTTP/1.1\r\nHost: 10.9.1.1\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
        let forwarded = forward.handle(.authFinished(.granted(Self.alice, scope: .sameCredentials)), now: 2)
        #expect(forwarded.contains { if case .connect = $0 { return true } else { return false } })
        let noPlace = forward.takeTunnelQuotaPlace()
        #expect(noPlace == nil)

        let taken = first.takeTunnelQuotaPlace()
        let again = first.takeTunnelQuotaPlace()
        #expect(again == nil, "handed over once")
        let place = try #require(taken)
        place.release()
        #expect(quota.openCount(NTLMUserName.comparisonKey("alice")) == 0)
        #expect(connect(Self.alice).1.contains { if case .connect = $0 { return true } else { return false } })
    }

    /// A CONNECT refused after it took its place (every address refused) gives the place
    /// back as the session ends, while the refused client may still be read to its close.
    @Test func aTunnelThatNeverOpenedGivesItsPlaceBackAtOnce() throws {
        let quota = TunnelQuota(limit: 1)
        var settings = try ProxySessionTests.settings()
        settings.requiresAuth = true
        settings.tunnelQuota = quota
        var session = ProxySession(settings: settings)
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.9.1.1:443 HTTP/1.1\r\nHost: 10.9.1.1:443\r\nProxy-Authorization: Basic QQ==\r\n\r\n"))
        _ = session.handle(.authFinished(.granted(Self.alice, scope: .sameCredentials)), now: 2)
        _ = session.handle(.auditCommitted, now: 3)
        #expect(quota.openCount(NTLMUserName.comparisonKey("alice")) == 1)
        let refused = session.handle(.upstreamConnectFailed(.upstreamRefused), now: 4)
        #expect(ProxySessionTests.refusalBody(refused)?.hasPrefix("HTTP/1.1 502 ") == true)
        #expect(quota.openCount(NTLMUserName.comparisonKey("alice")) == 0)
        #expect(session.takeTunnelQuotaPlace() == nil, "nothing left for the driver to give back twice")
    }

    @Test func digestStyleRequestScopeIsVerifiedEveryTime() throws {
        var session = try Self.session()
        let request = "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Digest x=1\r\n\r\n"
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        let refused = session.handle(.authFinished(.refused(ProxyAuthRefusal(reason: .staleNonce, challenges: ["Digest stale=true"]))), now: 2)
        #expect(ProxySessionTests.auditEntries(refused).first?.reason == .staleNonce)
        let again = ProxySessionTests.feed(&session, ProxySessionTests.bytes(request))
        #expect(Self.authRequests(again).count == 1)
    }

    @Test func aConnectionBoundPrincipalCoversLaterRequestsWithoutAHeader() throws {
        var session = try Self.session()
        let ntlm = AuthPrincipal(name: "bob", scheme: "NTLM")
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://app.corp.example/ HTTP/1.1\r\nHost: app.corp.example\r\nProxy-Authorization: NTLM TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n"))
        let step = session.handle(.authFinished(.refused(ProxyAuthRefusal(reason: .authContinue, scheme: "NTLM", challenges: ["NTLM abc"]))), now: 2)
        #expect(ProxySessionTests.refusalBody(step)?.contains("Proxy-Authenticate: NTLM abc\r\n") == true)
        #expect(!step.contains(.closeClient))
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://app.corp.example/ HTTP/1.1\r\nHost: app.corp.example\r\nProxy-Authorization: NTLM dHlwZTM=\r\n\r\n"))
        _ = session.handle(.authFinished(.granted(ntlm, scope: .connection)), now: 2)
        _ = session.handle(.resolved([.v4(IPv4Address(10, 0, 0, 1))]), now: 2)
        _ = session.handle(.upstreamConnected, now: 2)
        _ = session.handle(.auditCommitted, now: 2)
        _ = ProxySessionTests.upstream(&session, "HTTP/1.1 204 No Content\r\n\r\n")
        let later = ProxySessionTests.feed(&session, ProxySessionTests.bytes("GET http://app.corp.example/2 HTTP/1.1\r\nHost: app.corp.example\r\n\r\n"))
        #expect(Self.authRequests(later).isEmpty)
        #expect(ProxySessionTests.auditEntries(later).first?.principal == "bob")
        #expect(ProxySessionTests.auditEntries(later).first?.scheme == "NTLM")
    }

    @Test func aRefusalOfARequestWithABodyClosesTheConnection() throws {
        var session = try Self.session()
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("POST http://app.corp.example/ HTTP/1.1\r\nHost: app.corp.example\r\nContent-Length: 5\r\n\r\nhello"))
        let actions = session.handle(.authFinished(.refused(Self.challenge)), now: 2)
        #expect(actions.last == .closeClient)
        #expect(ProxySessionTests.refusalBody(actions)?.contains("Connection: close\r\n") == true)
    }

    @Test func lockedOutAndMalformedCredentialsCloseWithTheirStatus() throws {
        for (reason, status) in [(ReasonCode.lockedOut, 429), (.badCredentials, 400), (.authUnavailable, 503)] {
            var session = try Self.session()
            _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic !!\r\n\r\n"))
            let actions = session.handle(.authFinished(.refused(ProxyAuthRefusal(reason: reason, claimedPrincipal: "mallory", scheme: "Basic"))), now: 2)
            #expect(ProxySessionTests.refusalBody(actions)?.hasPrefix("HTTP/1.1 \(status) ") == true)
            #expect(actions.last == .closeClient)
            let row = ProxySessionTests.auditEntries(actions).first
            #expect(row?.principal == "mallory")
            #expect(row?.reason == reason)
        }
    }

    @Test func twoProxyAuthorizationFieldsAreAmbiguousAndRefused() throws {
        var session = try Self.session()
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic QQ==\r\nProxy-Authorization: Basic Qg==\r\n\r\n"))
        #expect(Self.authRequests(actions).isEmpty)
        #expect(ProxySessionTests.auditEntries(actions).first?.reason == .badCredentials)
        #expect(actions.last == .closeClient)
    }

    @Test func aPipelinedRetryAfterA407IsProcessedInOrder() throws {
        var session = try Self.session()
        let first = "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n"
        let second = "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Basic QQ==\r\n\r\n"
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes(first + second))
        let actions = session.handle(.authFinished(.refused(Self.challenge)), now: 2)
        #expect(Self.authRequests(actions).map(\.authorization) == ["Basic QQ=="])
    }

    @Test func theMutualAuthTokenRidesOnTheConnectResponse() throws {
        var session = try Self.session()
        _ = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\nProxy-Authorization: Negotiate YQ==\r\n\r\n"))
        _ = session.handle(.authFinished(.granted(AuthPrincipal(name: "alice@EXAMPLE.TEST", scheme: "Negotiate"),
                                                  scope: .connection, mutualAuth: "Negotiate b2s=")), now: 2)
        _ = session.handle(.upstreamConnected, now: 2)
        let started = session.handle(.auditCommitted, now: 2)
        guard case .startTunnel(_, let established, _)? = started.first(where: { if case .startTunnel = $0 { true } else { false } }) else {
            Issue.record("no tunnel")
            return
        }
        #expect(String(decoding: established, as: UTF8.self) == "HTTP/1.1 200 Connection established\r\nProxy-Authenticate: Negotiate b2s=\r\n\r\n")
    }
}
