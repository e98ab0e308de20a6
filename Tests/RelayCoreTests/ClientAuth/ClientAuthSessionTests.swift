import Synchronization
import Testing
@testable import RelayCore

/// Scheme choice, multi-leg steps and refusals of `ClientAuthSession`, with a scripted
/// Negotiate initiator standing in for GSS-API (the real one is tested against a KDC).
@Suite struct ClientAuthSessionTests {
    /// Returns `script` one token per step, recording what it was given.
    final class ScriptedInitiator: NegotiateInitiator {
        private let state: Mutex<(script: [[UInt8]], inputs: [[UInt8]?])>
        let mechanism: NegotiateMechanism

        init(_ script: [[UInt8]], mechanism: NegotiateMechanism) {
            state = Mutex((script, []))
            self.mechanism = mechanism
        }

        var inputs: [[UInt8]?] { state.withLock { $0.inputs } }
        var isComplete: Bool { state.withLock { $0.script.isEmpty } }

        func step(_ input: [UInt8]?) throws(ClientAuthError) -> [UInt8] {
            try state.withLock { (state) throws(ClientAuthError) -> [UInt8] in
                state.inputs.append(input)
                guard !state.script.isEmpty else { throw ClientAuthError.negotiateFailed("script over") }
                return state.script.removeFirst()
            }
        }
    }

    /// Makes a first token, then rejects whatever the peer sends, as GSS-API rejects a forged AP-REP.
    final class RejectingInitiator: NegotiateInitiator {
        var isComplete: Bool { false }

        func step(_ input: [UInt8]?) throws(ClientAuthError) -> [UInt8] {
            guard input == nil else { throw ClientAuthError.negotiateFailed("forged") }
            return [1]
        }
    }

    /// Hands out scripted initiators and keeps them for inspection.
    final class Factory: Sendable {
        let made = Mutex<[ScriptedInitiator]>([])
        let script: [[UInt8]]
        let failure: ClientAuthError?

        init(script: [[UInt8]] = [[1, 2, 3]], failure: ClientAuthError? = nil) {
            self.script = script
            self.failure = failure
        }

        var negotiate: NegotiateInitiatorFactory {
            { [self] _, mechanism throws(ClientAuthError) in
                if let failure { throw failure }
                let initiator = ScriptedInitiator(script, mechanism: mechanism)
                made.withLock { $0.append(initiator) }
                return initiator
            }
        }
    }

    static let everything = ["Basic realm=\"r\"", "NTLM", #"Digest realm="r", nonce="n", qop="auth""#,
                             #"Digest realm="r", nonce="n", qop="auth", algorithm=SHA-256"#, "Negotiate"]

    @Test func picksTheStrongestSchemeTheCredentialsAllow() throws {
        let factory = Factory()
        var withTicket = ClientAuthFixtures.session(ClientCredentials(user: "Mufasa", password: "Circle of Life",
                                                                      negotiate: factory.negotiate))
        #expect(try withTicket.answer(headerValues: Self.everything, method: "GET", target: "/") == "Negotiate AQID")
        #expect(factory.made.withLock { $0.map(\.mechanism) } == [.spnego])

        var digest = ClientAuthFixtures.session()
        #expect(try digest.answer(headerValues: Self.everything, method: "GET", target: "/")?.contains("algorithm=SHA-256,") == true)
        var ntlm = ClientAuthFixtures.session()
        #expect(try ntlm.answer(headerValues: Array(Self.everything[0...1]), method: "GET", target: "/")?.hasPrefix("NTLM TlRMTVNTUAAB") == true)
        var basic = ClientAuthFixtures.session()
        let value = try #require(try basic.answer(headerValues: ["Basic realm=\"r\""], method: "GET", target: "/"))
        #expect(value == "Basic TXVmYXNhOkNpcmNsZSBvZiBMaWZl")
        let decoded = try BasicCredentials(ProxyAuthorization(parsing: value))
        #expect(decoded.user == "Mufasa" && decoded.password == "Circle of Life")
    }

    @Test func withoutAUsableTicketNegotiateFallsBackToThePassword() throws {
        let factory = Factory(failure: .noCredentials)
        var session = ClientAuthFixtures.session(ClientCredentials(user: "Mufasa", password: "Circle of Life",
                                                                   negotiate: factory.negotiate))
        #expect(try session.answer(headerValues: ["Negotiate", "Basic realm=\"r\""], method: "GET", target: "/")
            == "Basic TXVmYXNhOkNpcmNsZSBvZiBMaWZl")

        var kerberosOnly = ClientAuthFixtures.session(.kerberos(Factory(failure: .negotiateFailed("no KDC")).negotiate))
        #expect(throws: ClientAuthError.negotiateFailed("no KDC")) {
            try kerberosOnly.answer(headerValues: ["Negotiate", "Basic realm=\"r\""], method: "GET", target: "/")
        }
        var noTicket = ClientAuthFixtures.session(.kerberos(Factory(failure: .noCredentials).negotiate))
        #expect(throws: ClientAuthError.noCredentials) {
            try noTicket.answer(headerValues: ["Negotiate"], method: "GET", target: "/")
        }
    }

    @Test func negotiateStepsThroughContinuationsAndVerifiesTheFinalToken() throws {
        let factory = Factory(script: [[1], [2], []])
        var session = ClientAuthFixtures.session(.kerberos(factory.negotiate))
        #expect(try session.answer(headerValues: ["Negotiate"], method: "GET", target: "/") == "Negotiate AQ==")
        #expect(try session.answer(headerValues: ["Negotiate CQ=="], method: "GET", target: "/") == "Negotiate Ag==")
        try session.accepted(AuthChallenge.parse(headerValues: ["Negotiate Cg=="]))
        let initiator = try #require(factory.made.withLock { $0.first })
        #expect(initiator.inputs == [nil, [9], [10]])
        #expect(initiator.isComplete)
        #expect(session.preemptive(method: "GET", target: "/") == nil, "Negotiate is bound to the connection")
    }

    @Test func aFinalTokenTheInitiatorRejectsOrThatLeavesItUnfinishedIsMutualAuthFailed() throws {
        var rejected = ClientAuthFixtures.session(.kerberos({ _, _ throws(ClientAuthError) in RejectingInitiator() }))
        _ = try rejected.answer(headerValues: ["Negotiate"], method: "CONNECT", target: "a:1")
        #expect(throws: ClientAuthError.mutualAuthFailed("forged")) {
            try rejected.accepted(AuthChallenge.parse(headerValues: ["Negotiate Cg=="]))
        }
        #expect(throws: ClientAuthError.mutualAuthFailed("forged"), "the session stays failed") {
            try rejected.answer(headerValues: ["Negotiate"], method: "CONNECT", target: "a:1")
        }
        // A step that still wants more after the peer said yes.
        var unfinished = ClientAuthFixtures.session(.kerberos(Factory(script: [[1], [2], [3]]).negotiate))
        _ = try unfinished.answer(headerValues: ["Negotiate"], method: "CONNECT", target: "a:1")
        #expect(throws: ClientAuthError.mutualAuthFailed("the final token left the context unfinished")) {
            try unfinished.accepted(AuthChallenge.parse(headerValues: ["Negotiate Cg=="]))
        }
        var notBase64 = ClientAuthFixtures.session(.kerberos(Factory(script: [[1], []]).negotiate))
        _ = try notBase64.answer(headerValues: ["Negotiate"], method: "CONNECT", target: "a:1")
        #expect(throws: ClientAuthError.mutualAuthFailed("the final token is not base64")) {
            try notBase64.accepted(AuthChallenge.parse(headerValues: ["Negotiate A==="]))
        }
    }

    @Test func aSuccessWithoutAFinalTokenIsTakenAndLeavesTheContextAsItWas() throws {
        let factory = Factory(script: [[1], []])
        var session = ClientAuthFixtures.session(.kerberos(factory.negotiate))
        _ = try session.answer(headerValues: ["Negotiate"], method: "CONNECT", target: "a:1")
        try session.accepted(AuthChallenge.parse(headerValues: [#"Basic realm="r""#]))
        let initiator = try #require(factory.made.withLock { $0.first })
        #expect(initiator.inputs == [nil], "nothing was fed to GSS-API")
    }

    @Test func aRefusedNegotiateTriesRawKerberosThenThePasswordThenStops() throws {
        let factory = Factory()
        var session = ClientAuthFixtures.session(ClientCredentials(user: "Mufasa", password: "Circle of Life",
                                                                   negotiate: factory.negotiate))
        let offered = ["Negotiate", "Basic realm=\"r\""]
        #expect(try session.answer(headerValues: offered, method: "GET", target: "/") == "Negotiate AQID")
        #expect(try session.answer(headerValues: offered, method: "GET", target: "/") == "Negotiate AQID")
        #expect(factory.made.withLock { $0.map(\.mechanism) } == [.spnego, .kerberos])
        #expect(try session.answer(headerValues: offered, method: "GET", target: "/")?.hasPrefix("Basic ") == true)
        #expect(throws: ClientAuthError.loop) { try session.answer(headerValues: offered, method: "GET", target: "/") }

        var kerberosOnly = ClientAuthFixtures.session(.kerberos(Factory().negotiate))
        _ = try kerberosOnly.answer(headerValues: ["Negotiate"], method: "GET", target: "/")
        _ = try kerberosOnly.answer(headerValues: ["Negotiate"], method: "GET", target: "/")
        #expect(throws: ClientAuthError.loop) { try kerberosOnly.answer(headerValues: ["Negotiate"], method: "GET", target: "/") }
    }

    @Test func basicIsSentPreemptivelyOnceAcceptedAndARefusalIsALoop() throws {
        var session = ClientAuthFixtures.session()
        #expect(session.preemptive(method: "GET", target: "/") == nil, "nothing accepted yet")
        let first = try session.answer(headerValues: ["Basic realm=\"r\""], method: "GET", target: "/")
        #expect(session.preemptive(method: "GET", target: "/") == nil, "the first answer is still out")
        try session.accepted()
        #expect(session.preemptive(method: "GET", target: "/b") == first)
        // A preemptive answer refused is answered once afresh, then it is a loop.
        #expect(try session.answer(headerValues: ["Basic realm=\"r\""], method: "GET", target: "/b") == first)
        #expect(throws: ClientAuthError.loop) {
            try session.answer(headerValues: ["Basic realm=\"r\""], method: "GET", target: "/b")
        }
    }

    @Test func nothingOfferedNothingKnownOrNothingAllowed() throws {
        var session = ClientAuthFixtures.session()
        #expect(try session.answer([], method: "GET", target: "/") == nil)
        #expect(throws: ClientAuthError.unsupportedScheme) {
            try session.answer(headerValues: ["Bearer realm=\"api\"", "Mutual abc"], method: "GET", target: "/")
        }
        var noPassword = ClientAuthFixtures.session(ClientCredentials(user: "u", password: nil))
        #expect(throws: ClientAuthError.noCredentials) {
            try noPassword.answer(headerValues: ["Basic realm=\"r\"", "NTLM"], method: "GET", target: "/")
        }
        var colon = ClientAuthFixtures.session(ClientCredentials(user: "a:b", password: "p"))
        #expect(throws: ClientAuthError.badCredentials("user")) {
            try colon.answer(headerValues: ["Basic realm=\"r\""], method: "GET", target: "/")
        }
    }

    @Test func noErrorOrDescriptionShowsThePassword() throws {
        let secret = "s3cr3t-Pa55"
        let credentials = ClientCredentials(user: "Mufasa", password: secret)
        #expect(!credentials.description.contains(secret))
        #expect(!"\(credentials)".contains(secret) && !String(reflecting: credentials).contains(secret))
        var descriptions: [String] = []
        let attempts: [[String]] = [["Basic realm=\"r\""], ["Basic realm=\"r\""], ["Negotiate \u{1}"], ["Bearer"]]
        var session = ClientAuthFixtures.session(credentials)
        for attempt in attempts {
            do {
                _ = try session.answer(headerValues: attempt, method: "GET", target: "/")
            } catch {
                descriptions.append(error.description)
            }
            session = descriptions.isEmpty ? session : ClientAuthFixtures.session(credentials)
        }
        #expect(!descriptions.isEmpty)
        for description in descriptions {
            #expect(!description.contains(secret))
            #expect(!description.contains("czNjcjN0"), "no base64 of the password either")
        }
    }

    @Test func namesTheFieldsOfEachPeer() {
        #expect(ClientAuthSession.Peer.proxy.authorizationField == "Proxy-Authorization")
        #expect(ClientAuthSession.Peer.proxy.challengeField == "Proxy-Authenticate")
        #expect(ClientAuthSession.Peer.proxy.challengeStatus == 407)
        #expect(ClientAuthSession.Peer.server.authorizationField == "Authorization")
        #expect(ClientAuthSession.Peer.server.challengeField == "WWW-Authenticate")
        #expect(ClientAuthSession.Peer.server.challengeStatus == 401)
    }
}
