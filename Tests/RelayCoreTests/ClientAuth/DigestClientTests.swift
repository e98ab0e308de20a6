import Testing
@testable import RelayCore

/// Digest answers byte by byte against RFC 7616 §3.9.1, and accepted or refused by the
/// relay's own `DigestAuthenticator`.
@Suite struct DigestClientTests {
    static func rfc(_ algorithm: String) -> String {
        #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\#(algorithm), "#
            + #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
    }

    static func expected(_ algorithm: String, _ response: String) -> String {
        #"Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=\#(algorithm), "#
            + #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, "#
            + #"cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, "#
            + #"response="\#(response)", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
    }

    @Test func answersTheRFC7616ExampleWithSHA256WhenBothAreOffered() throws {
        var session = ClientAuthFixtures.session()
        let value = try session.answer(headerValues: [Self.rfc("MD5"), Self.rfc("SHA-256")],
                                       method: "GET", target: "/dir/index.html")
        #expect(value == Self.expected("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"))
        #expect(session.scheme == .digest)
    }

    @Test func answersTheRFC7616ExampleWithMD5() throws {
        var session = ClientAuthFixtures.session()
        let value = try session.answer(headerValues: [Self.rfc("MD5")], method: "GET", target: "/dir/index.html")
        #expect(value == Self.expected("MD5", "8ca523f5e9506fed4657c9700eebdbec"))
    }

    @Test func sessAlgorithmsFoldTheNoncesIntoHA1() throws {
        var session = ClientAuthFixtures.session()
        let value = try #require(try session.answer(headerValues: [Self.rfc("MD5-sess")], method: "GET", target: "/dir/index.html"))
        let nonce = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
        let cnonce = ClientAuthFixtures.rfcCnonce
        let md5 = DigestAlgorithm.md5
        let ha1 = md5.hexHash(md5.hexHash("Mufasa:http-auth@example.org:Circle of Life") + ":\(nonce):\(cnonce)")
        let response = md5.hexHash("\(ha1):\(nonce):00000001:\(cnonce):auth:\(md5.hexHash("GET:/dir/index.html"))")
        #expect(value.contains("algorithm=MD5-sess,"))
        #expect(value.contains("response=\"\(response)\""))
    }

    // MARK: Against the relay's verifier

    static let key = [UInt8](repeating: 7, count: 32)
    static let t0: UInt64 = 1_000

    static func authenticator(realm: String = "relay@example.test", userhash: Bool = true,
                              algorithms: [DigestAlgorithm] = [.sha256, .md5]) -> DigestAuthenticator {
        DigestAuthenticator(configuration: .init(realm: realm, serverKey: key, algorithms: algorithms,
                                                 nonceLifetime: 60, offerUserhash: userhash))
    }

    static func verify(_ server: DigestAuthenticator, _ value: String?, target: String = "/x", now: UInt64 = t0,
                       password: String = "Circle of Life") throws -> DigestVerification {
        let authorization = try ProxyAuthorization(parsing: try #require(value))
        return server.verify(authorization, method: "GET", requestTarget: target, now: now,
                             userForUserhash: { hash, realm, algorithm in
                                 algorithm.userhash(user: "Mufasa", realm: realm) == hash ? "Mufasa" : nil
                             },
                             ha1: { user, realm, algorithm in
                                 user == "Mufasa" ? algorithm.ha1(user: user, realm: realm, password: password) : nil
                             })
    }

    @Test(arguments: [[DigestAlgorithm.sha256, .md5], [.md5]], [true, false])
    func theRelayAcceptsTheAnswerAndCountsUpPreemptively(algorithms: [DigestAlgorithm], userhash: Bool) throws {
        let server = Self.authenticator(userhash: userhash, algorithms: algorithms)
        var session = ClientAuthFixtures.session(entropy: .system)
        let first = try session.answer(headerValues: server.challenges(now: Self.t0).map(\.headerValue),
                                       method: "GET", target: "/x")
        #expect(first?.contains("algorithm=\(algorithms[0].rawValue),") == true)
        #expect(first?.contains("userhash=true") == userhash)
        #expect(first?.contains("Mufasa") == !userhash)
        #expect(try Self.verify(server, first) == .ok(user: "Mufasa"))
        try session.accepted()

        let second = session.preemptive(method: "GET", target: "/y")
        #expect(second?.contains("nc=00000002") == true)
        #expect(try Self.verify(server, second, target: "/y") == .ok(user: "Mufasa"))
        // The same count again is a replay the relay refuses.
        #expect(try Self.verify(server, second, target: "/y") == .failed(reason: .replayedNonce))
    }

    @Test func aWrongPasswordIsRefusedAndNeverRetriedOrDowngraded() throws {
        let server = Self.authenticator()
        let offered = server.challenges(now: Self.t0).map(\.headerValue) + [#"Basic realm="relay""#]
        var session = ClientAuthFixtures.session(ClientCredentials(user: "Mufasa", password: "wrong"))
        let first = try session.answer(headerValues: offered, method: "GET", target: "/x")
        #expect(try Self.verify(server, first) == .failed(reason: .badPassword))
        #expect(throws: ClientAuthError.loop) {
            try session.answer(headerValues: server.challenges(now: Self.t0).map(\.headerValue) + [#"Basic realm="relay""#],
                               method: "GET", target: "/x")
        }
        // Once failed, the session stays failed.
        #expect(throws: ClientAuthError.loop) {
            try session.answer(headerValues: [#"Basic realm="relay""#], method: "GET", target: "/x")
        }
    }

    @Test func aStaleNonceIsAnsweredAgainWithoutANewPassword() throws {
        let server = Self.authenticator()
        var session = ClientAuthFixtures.session(entropy: .system)
        let first = try session.answer(headerValues: server.challenges(now: Self.t0).map(\.headerValue),
                                       method: "GET", target: "/x")
        let late = Self.t0 + 3600
        #expect(try Self.verify(server, first, now: late) == .stale)
        let again = try session.answer(headerValues: server.challenges(now: late, stale: true).map(\.headerValue),
                                       method: "GET", target: "/x")
        #expect(again?.contains("nc=00000001") == true)
        #expect(try Self.verify(server, again, now: late) == .ok(user: "Mufasa"))

        // A peer that says stale for ever is looping.
        for _ in 0..<ClientAuthSession.maxStaleAnswers - 1 {
            _ = try session.answer(headerValues: server.challenges(now: late, stale: true).map(\.headerValue),
                                   method: "GET", target: "/x")
        }
        #expect(throws: ClientAuthError.loop) {
            try session.answer(headerValues: server.challenges(now: late, stale: true).map(\.headerValue),
                               method: "GET", target: "/x")
        }
    }

    @Test func aRealmWithQuotesAndBackslashesRoundTrips() throws {
        let realm = #"say "hi" \ now"#
        let server = Self.authenticator(realm: realm)
        var session = ClientAuthFixtures.session(entropy: .system)
        let value = try session.answer(headerValues: server.challenges(now: Self.t0).map(\.headerValue),
                                       method: "GET", target: "/x")
        #expect(value?.contains(#"realm="say \"hi\" \\ now""#) == true)
        #expect(try Self.verify(server, value) == .ok(user: "Mufasa"))
    }

    @Test func aNonASCIIUserGoesAsAnExtendedValue() throws {
        let server = Self.authenticator(userhash: false)
        var session = ClientAuthFixtures.session(ClientCredentials(user: "Jäsøn Doe", password: "Circle of Life"),
                                                 entropy: .system)
        let value = try session.answer(headerValues: server.challenges(now: Self.t0).map(\.headerValue),
                                       method: "GET", target: "/x")
        #expect(value?.hasPrefix("Digest username*=UTF-8''J%C3%A4s%C3%B8n%20Doe, ") == true)
        let authorization = try ProxyAuthorization(parsing: try #require(value))
        let verdict = server.verify(authorization, method: "GET", requestTarget: "/x", now: Self.t0) { user, realm, algorithm in
            algorithm.ha1(user: user, realm: realm, password: "Circle of Life")
        }
        #expect(verdict == .ok(user: "Jäsøn Doe"))
    }

    // MARK: Hostile challenges

    @Test(arguments: [
        (#"Digest realm="r", qop="auth""#, "nonce"),
        (#"Digest realm="r", nonce="", qop="auth""#, "nonce"),
        (#"Digest nonce="n", qop="auth""#, "realm"),
        (#"Digest realm="r", nonce="n", qop="auth", algorithm=SHA-512-256"#, "algorithm"),
        (#"Digest realm="r", nonce="n", qop="auth-int""#, "qop"),
        (#"Digest realm="r", nonce="n""#, "qop"),
        (#"Digest realm="r", nonce="n", qop="auth", stale=maybe"#, "stale"),
        (#"Digest realm="r", nonce="\#(String(repeating: "n", count: 2000))", qop="auth""#, "nonce"),
        (#"Digest realm="\#(String(repeating: "r", count: 2000))", nonce="n", qop="auth""#, "realm"),
        ("Digest abc==", "Digest"),
    ])
    func unusableDigestChallengesAreTypedErrors(value: String, parameter: String) {
        var session = ClientAuthFixtures.session()
        #expect(throws: ClientAuthError.badChallenge(parameter)) {
            try session.answer(headerValues: [value], method: "GET", target: "/x")
        }
    }

    @Test func aBadDigestChallengeBesideAGoodOneIsSkipped() throws {
        var session = ClientAuthFixtures.session()
        let value = try session.answer(headerValues: [#"Digest realm="r", nonce="n", qop="auth", algorithm=SHA-512-256"#,
                                                      Self.rfc("MD5")], method: "GET", target: "/dir/index.html")
        #expect(value == Self.expected("MD5", "8ca523f5e9506fed4657c9700eebdbec"))
    }
}
