import Foundation
import Testing
@testable import RelayCore

/// RFC 7616 vectors and the authenticator's decisions: stale, replay, uri, userhash.
@Suite struct AuthDigestTests {
    static let realm = "http-auth@example.org"
    static let key = [UInt8](repeating: 0x42, count: 32)
    static let passwords = ["Mufasa": "Circle of Life", "Jäsøn Doe": "Secret, or not?"]
    static let t0: UInt64 = 1_780_000_000

    static func ha1(_ user: String, _ realm: String, _ algorithm: DigestAlgorithm) -> [UInt8]? {
        passwords[user].map { algorithm.ha1(user: user, realm: realm, password: $0) }
    }

    static func authenticator(_ algorithms: [DigestAlgorithm] = [.sha256, .md5], lifetime: UInt64 = 300,
                              tracked: Int = 1024) -> DigestAuthenticator {
        DigestAuthenticator(configuration: .init(realm: realm, serverKey: key, algorithms: algorithms,
                                                 nonceLifetime: lifetime, trackedNonces: tracked))
    }

    /// What a client sends: RFC 7616 §3.4.1 computed here from the password.
    static func answer(_ challenge: DigestChallenge, user: String = "Mufasa", password: String = "Circle of Life",
                       method: String = "GET", uri: String = "/dir/index.html", nc: String = "00000001",
                       cnonce: String = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", userhash: Bool = false,
                       sendAlgorithm: Bool = true, opaque: String?? = .none) -> ProxyAuthorization {
        let algorithm = challenge.algorithm
        let ha1 = AuthHex.encode(algorithm.ha1(user: user, realm: challenge.realm, password: password))
        let ha2 = algorithm.hexHash("\(method):\(uri)")
        let response = algorithm.hexHash("\(ha1):\(challenge.nonce):\(nc):\(cnonce):auth:\(ha2)")
        let name = userhash ? algorithm.userhash(user: user, realm: challenge.realm) : user
        var value = "Digest username=\"\(name)\", realm=\"\(challenge.realm)\", uri=\"\(uri)\""
        if sendAlgorithm { value += ", algorithm=\(algorithm.rawValue)" }
        value += ", nonce=\"\(challenge.nonce)\", nc=\(nc), cnonce=\"\(cnonce)\", qop=auth, response=\"\(response)\""
        switch opaque {
        case .none: value += ", opaque=\"\(challenge.opaque)\""
        case .some(.none): break
        case .some(.some(let other)): value += ", opaque=\"\(other)\""
        }
        if userhash { value += ", userhash=true" }
        return try! ProxyAuthorization(parsing: value)
    }

    static func verify(_ authenticator: DigestAuthenticator, _ authorization: ProxyAuthorization,
                       method: String = "GET", target: String = "/dir/index.html", now: UInt64 = t0,
                       userhashes: Bool = true) -> DigestVerification {
        authenticator.verify(authorization, method: method, requestTarget: target, now: now,
                             userForUserhash: { hash, realm, algorithm in
                                 guard userhashes else { return nil }
                                 return passwords.keys.first { algorithm.userhash(user: $0, realm: realm) == hash }
                             }, ha1: ha1)
    }

    // MARK: RFC 7616 §3.9.1

    static let rfcNonce = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
    static let rfcCnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
    static let rfcOpaque = "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"

    /// The response values printed in RFC 7616 §3.9.1 (also reproduced with Python's hashlib
    /// while writing this test).
    @Test(arguments: [
        (DigestAlgorithm.sha256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        (DigestAlgorithm.md5, "8ca523f5e9506fed4657c9700eebdbec"),
    ])
    func matchesRFC7616Example(_ algorithm: DigestAlgorithm, _ expected: String) throws {
        let header = """
            Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", \
            algorithm=\(algorithm.rawValue), nonce="\(Self.rfcNonce)", nc=00000001, cnonce="\(Self.rfcCnonce)", \
            qop=auth, response="\(expected)", opaque="\(Self.rfcOpaque)"
            """
        let credentials = try DigestCredentials(ProxyAuthorization(parsing: header))
        #expect(credentials.username == "Mufasa" && credentials.algorithm == algorithm && credentials.nonceCount == 1)
        #expect(credentials.opaque == Self.rfcOpaque && credentials.uri == "/dir/index.html")
        let ha1 = algorithm.ha1(user: "Mufasa", realm: Self.realm, password: "Circle of Life")
        let computed = DigestAuthenticator.response(ha1: ha1, method: "GET", credentials: credentials)
        #expect(AuthHex.encode(computed) == expected)
        #expect(credentials.response == AuthVectors.bytes(expected))
    }

    @Test func userhashAndExtendedUsernameFollowRFC7616() throws {
        // RFC 7616 §3.9.2's user; its SHA-512-256 userhash is out of scope, so the SHA-256
        // value below was computed with Python's hashlib.
        #expect(DigestAlgorithm.sha256.userhash(user: "Jäsøn Doe", realm: "api@example.org")
            == "5a1a8a47df5c298551b9b42ba9b05835174a5bd7d511ff7fe9191d8e946fc4e7")
        let header = """
            Digest username*=UTF-8''J%C3%A4s%C3%B8n%20Doe, realm="api@example.org", uri="/doe.json", \
            algorithm=SHA-256, nonce="n", nc=00000001, cnonce="c", qop=auth, \
            response="\(String(repeating: "0", count: 64))"
            """
        #expect(try DigestCredentials(ProxyAuthorization(parsing: header)).username == "Jäsøn Doe")
        for bad in ["UTF-8'J%C3%A4s", "ISO-8859-1''J%E4s", "UTF-8''J%C3", "UTF-8''J%zz", "UTF-8''%C3%28", "UTF-8''a*b"] {
            let value = header.replacingOccurrences(of: "UTF-8''J%C3%A4s%C3%B8n%20Doe", with: bad)
            #expect(throws: AuthError.badParameter("username*")) { try DigestCredentials(ProxyAuthorization(parsing: value)) }
        }
        let both = header.replacingOccurrences(of: "username*=", with: "username=\"x\", username*=")
        #expect(throws: AuthError.badParameter("username*")) { try DigestCredentials(ProxyAuthorization(parsing: both)) }
    }

    // MARK: Challenges

    @Test func challengesOfferEveryAlgorithmStrongestFirstWithOneNonce() throws {
        let challenges = Self.authenticator().challenges(now: Self.t0)
        #expect(challenges.map(\.algorithm) == [.sha256, .md5])
        #expect(challenges[0].nonce == challenges[1].nonce && challenges[0].opaque == challenges[1].opaque)
        #expect(challenges[0].nonce.utf8.count == DigestNonceTable.encodedLength)
        let parsed = try ProxyAuthorization(parsing: challenges[0].headerValue)
        let params = try #require(parsed.parameters)
        #expect(parsed.hasScheme("Digest"))
        #expect(params["realm"] == Self.realm && params["qop"] == "auth" && params["algorithm"] == "SHA-256")
        #expect(params["nonce"] == challenges[0].nonce && params["charset"] == "UTF-8" && params["userhash"] == "true")
        #expect(params["stale"] == nil)
        let stale = Self.authenticator().challenges(now: Self.t0, stale: true)
        #expect(try ProxyAuthorization(parsing: stale[1].headerValue).parameters?["stale"] == "true")
        #expect(DigestChallenge.quoted(#"a"b\c"#) == #""a\"b\\c""#)
    }

    // MARK: Verification

    @Test(arguments: [DigestAlgorithm.sha256, .md5])
    func acceptsTheRightPasswordOnce(_ algorithm: DigestAlgorithm) {
        let authenticator = Self.authenticator()
        let challenge = authenticator.challenges(now: Self.t0).first { $0.algorithm == algorithm }!
        let first = Self.answer(challenge)
        #expect(Self.verify(authenticator, first) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, first) == .failed(reason: .replayedNonce))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002")) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002")) == .failed(reason: .replayedNonce))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000001")) == .failed(reason: .replayedNonce))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "0000000A")) == .ok(user: "Mufasa"))
    }

    @Test func wrongPasswordsNeitherSucceedNorBurnCounts() {
        let authenticator = Self.authenticator()
        let challenge = authenticator.challenges(now: Self.t0)[0]
        #expect(Self.verify(authenticator, Self.answer(challenge, password: "circle of life", nc: "ffffffff"))
            == .failed(reason: .badPassword))
        #expect(Self.verify(authenticator, Self.answer(challenge)) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, Self.answer(challenge, user: "Scar", password: "x", nc: "00000002"))
            == .failed(reason: .unknownUser))
        // The method is part of HA2: the same answer for POST is a wrong proof.
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000003"), method: "POST")
            == .failed(reason: .badPassword))
    }

    @Test func expiredUnknownAndForeignNoncesAreStaleOnlyWithTheRightPassword() {
        let authenticator = Self.authenticator(lifetime: 60)
        let challenge = authenticator.challenges(now: Self.t0)[0]
        #expect(Self.verify(authenticator, Self.answer(challenge), now: Self.t0 + 60) == .ok(user: "Mufasa"))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002"), now: Self.t0 + 61) == .stale)
        #expect(Self.verify(authenticator, Self.answer(challenge, password: "nope", nc: "00000003"), now: Self.t0 + 61)
            == .failed(reason: .badPassword))
        #expect(DigestVerification.stale.failureReason == .staleNonce)

        // Issued by another instance sharing the key: not in this one's table.
        let sibling = Self.authenticator().challenges(now: Self.t0)[0]
        #expect(Self.verify(authenticator, Self.answer(sibling)) == .stale)
        // Issued under another key (before a restart with a new key, say).
        let other = DigestAuthenticator(configuration: .init(realm: Self.realm, serverKey: [UInt8](repeating: 7, count: 32)))
        let foreign = other.challenges(now: Self.t0)[0]
        #expect(Self.verify(authenticator, Self.answer(foreign, opaque: .some(challenge.opaque))) == .stale)
    }

    @Test func evictedNoncesAreStale() {
        let authenticator = Self.authenticator(tracked: 2)
        let oldest = authenticator.challenges(now: Self.t0)[0]
        _ = authenticator.challenges(now: Self.t0)
        _ = authenticator.challenges(now: Self.t0)
        #expect(Self.verify(authenticator, Self.answer(oldest)) == .stale)
    }

    @Test func requestTargetRealmAlgorithmAndOpaqueMustMatch() {
        let authenticator = Self.authenticator([.sha256])
        let challenge = authenticator.challenges(now: Self.t0)[0]
        #expect(Self.verify(authenticator, Self.answer(challenge), target: "/dir/index.html?x")
            == .failed(reason: .badRequest))
        #expect(Self.verify(authenticator, Self.answer(challenge, uri: "/other"), target: "/dir/index.html")
            == .failed(reason: .badRequest))
        let connect = Self.answer(challenge, method: "CONNECT", uri: "app1.corp.example:443")
        #expect(Self.verify(authenticator, connect, method: "CONNECT", target: "app1.corp.example:443") == .ok(user: "Mufasa"))

        let otherRealm = DigestChallenge(realm: "elsewhere", nonce: challenge.nonce, opaque: challenge.opaque,
                                         algorithm: .sha256, stale: false, userhash: false)
        #expect(Self.verify(authenticator, Self.answer(otherRealm, nc: "00000002")) == .failed(reason: .badRequest))
        let md5 = DigestChallenge(realm: Self.realm, nonce: challenge.nonce, opaque: challenge.opaque,
                                  algorithm: .md5, stale: false, userhash: false)
        #expect(Self.verify(authenticator, Self.answer(md5, nc: "00000002")) == .failed(reason: .badRequest))
        // No algorithm parameter means MD5, which this authenticator does not offer.
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002", sendAlgorithm: false))
            == .failed(reason: .badRequest))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002", opaque: .some(.none)))
            == .failed(reason: .badRequest))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002", opaque: .some("x")))
            == .failed(reason: .badRequest))
        #expect(Self.verify(authenticator, Self.answer(challenge, nc: "00000002")) == .ok(user: "Mufasa"))
    }

    @Test func missingAlgorithmMeansMD5() {
        let authenticator = Self.authenticator()
        let md5 = authenticator.challenges(now: Self.t0)[1]
        #expect(Self.verify(authenticator, Self.answer(md5, sendAlgorithm: false)) == .ok(user: "Mufasa"))
    }

    @Test func userhashNeedsAResolver() {
        let authenticator = Self.authenticator()
        let challenge = authenticator.challenges(now: Self.t0)[0]
        let hashed = Self.answer(challenge, user: "Jäsøn Doe", password: "Secret, or not?", userhash: true)
        #expect(Self.verify(authenticator, hashed, userhashes: false) == .failed(reason: .unknownUser))
        #expect(Self.verify(authenticator, hashed) == .ok(user: "Jäsøn Doe"))
        let noUserhash = DigestAuthenticator(configuration: .init(realm: Self.realm, serverKey: Self.key, offerUserhash: false))
        let plain = noUserhash.challenges(now: Self.t0)[0]
        #expect(Self.verify(noUserhash, Self.answer(plain, userhash: true)) == .failed(reason: .badRequest))
    }

    @Test func storeReturningAWrongLengthHA1IsAnInternalError() {
        let authenticator = Self.authenticator()
        let challenge = authenticator.challenges(now: Self.t0)[0]
        let result = authenticator.verify(Self.answer(challenge), method: "GET", requestTarget: "/dir/index.html",
                                          now: Self.t0, ha1: { _, _, _ in [1, 2, 3] })
        #expect(result == .failed(reason: .internalError))
    }

    // MARK: Credentials parsing

    static let complete: [(String, String)] = [
        ("username", "\"Mufasa\""), ("realm", "\"r\""), ("nonce", "\"n\""), ("uri", "\"/\""),
        ("response", "\"\(String(repeating: "a", count: 64))\""), ("algorithm", "SHA-256"),
        ("qop", "auth"), ("cnonce", "\"c\""), ("nc", "00000001"),
    ]

    static func credentials(replacing name: String, with value: String?) throws(AuthError) -> DigestCredentials {
        var pairs = complete.compactMap { pair -> String? in
            guard pair.0 == name else { return "\(pair.0)=\(pair.1)" }
            return value.map { "\(name)=\($0)" }
        }
        if !complete.contains(where: { $0.0 == name }), let value { pairs.append("\(name)=\(value)") }
        return try DigestCredentials(ProxyAuthorization(parsing: "Digest " + pairs.joined(separator: ", ")))
    }

    @Test func readsParameterNamesInAnyCase() throws {
        let shouted = Self.complete.map { "\($0.0.uppercased())=\($0.1)" } + ["Opaque=\"o\"", "UserHash=false"]
        let credentials = try DigestCredentials(ProxyAuthorization(parsing: "Digest " + shouted.joined(separator: ", ")))
        #expect(credentials.username == "Mufasa" && credentials.realm == "r" && credentials.nonce == "n")
        #expect(credentials.uri == "/" && credentials.algorithm == .sha256 && credentials.qop == "auth")
        #expect(credentials.cnonce == "c" && credentials.nonceCount == 1 && credentials.opaque == "o")
        #expect(credentials.userhash == false && credentials.response == [UInt8](repeating: 0xAA, count: 32))
        // Parameters Digest does not define are ignored, whatever their case.
        let extra = Self.complete.map { "\($0.0)=\($0.1)" } + ["X-Extra=1", "nonceX=2"]
        #expect(try DigestCredentials(ProxyAuthorization(parsing: "Digest " + extra.joined(separator: ", "))).nonce == "n")
    }

    /// A name one letter or digit away from a required one is not that parameter, wherever
    /// the change falls (the field is picked by length and first letter before comparing).
    @Test func aNameOneByteOffIsAnotherParameter() {
        let required = ["username", "realm", "nonce", "uri", "response", "qop", "cnonce", "nc"]
        let replacements = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8)
        for name in required {
            var mutated = Array(name.utf8)
            for position in mutated.indices {
                let original = mutated[position]
                for byte in replacements where byte | 0x20 != original | 0x20 {
                    mutated[position] = byte
                    let renamed = String(decoding: mutated, as: UTF8.self)
                    let pairs = Self.complete.map { "\($0.0 == name ? renamed : $0.0)=\($0.1)" }
                    #expect(throws: AuthError.missingParameter(name), "\(renamed)") {
                        try DigestCredentials(ProxyAuthorization(parsing: "Digest " + pairs.joined(separator: ", ")))
                    }
                }
                mutated[position] = original
            }
        }
    }

    @Test func refusesMissingRequiredParameters() throws {
        _ = try Self.credentials(replacing: "none", with: nil)
        for name in ["username", "realm", "nonce", "uri", "response", "qop", "cnonce", "nc"] {
            #expect(throws: AuthError.missingParameter(name)) { try Self.credentials(replacing: name, with: nil) }
        }
    }

    @Test(arguments: [
        ("qop", "auth-int"), ("qop", "\"auth,auth-int\""), ("nc", "1"), ("nc", "000000001"), ("nc", "0000000g"),
        ("nc", "00000000"), ("nc", "+0000001"), ("response", "\"abc\""), ("response", "\"\(String(repeating: "g", count: 64))\""),
        ("response", "\"\(String(repeating: "a", count: 32))\""), ("algorithm", "SHA-512-256"), ("algorithm", "MD5-sess"),
        ("userhash", "maybe"), ("cnonce", "\"\""), ("uri", "\"\""), ("username", "\"\""),
        ("username", "\"\(String(repeating: "u", count: 257))\""), ("nonce", "\"\(String(repeating: "n", count: 129))\""),
        ("uri", "\"/a\u{85}\""),
    ])
    func refusesMalformedParameters(_ name: String, _ value: String) {
        #expect(throws: AuthError.badParameter(name)) { try Self.credentials(replacing: name, with: value) }
    }

    @Test func userhashMustBeHexOfTheDigestLength() throws {
        #expect(throws: AuthError.badParameter("username")) {
            try DigestCredentials(ProxyAuthorization(parsing:
                "Digest username=\"Mufasa\", userhash=true, realm=r, nonce=n, uri=\"/\", response=\"\(String(repeating: "a", count: 64))\", algorithm=SHA-256, qop=auth, cnonce=c, nc=00000001"))
        }
    }
}
