import Testing
@testable import RelayCore

/// Challenge lists split where a scheme starts, not at every comma; hostile values are
/// typed errors.
@Suite struct AuthChallengeParseTests {
    @Test func splitsTheRFC9110ExampleIntoTwoChallenges() throws {
        let value = #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#
        let challenges = try AuthChallenge.parse(headerValues: [value])
        #expect(challenges.map(\.scheme) == ["Newauth", "Basic"])
        #expect(challenges[0]["realm"] == "apps")
        #expect(challenges[0]["type"] == "1")
        #expect(challenges[0]["title"] == #"Login to "apps""#)
        #expect(challenges[1]["realm"] == "simple")
        #expect(challenges[1].token68 == nil)
    }

    @Test func keepsCommasInsideQuotedStringsAndReadsToken68AndBareSchemes() throws {
        let challenges = try AuthChallenge.parse(headerValues: [
            #"Digest realm="a, b", qop="auth, auth-int", nonce="n,=,", algorithm=SHA-256"#,
            "Negotiate, NTLM TlRMTVNTUAACAAAA==, Basic",
            " , ,",
        ])
        #expect(challenges.map(\.scheme) == ["Digest", "Negotiate", "NTLM", "Basic"])
        #expect(challenges[0]["realm"] == "a, b")
        #expect(challenges[0]["qop"] == "auth, auth-int")
        #expect(challenges[0]["nonce"] == "n,=,")
        #expect(challenges[0]["ALGORITHM"] == "SHA-256")
        #expect(challenges[1].parameters == nil && challenges[1].token68 == nil)
        #expect(challenges[2].token68 == "TlRMTVNTUAACAAAA==")
        #expect(challenges[3].hasScheme("basic"))
    }

    @Test func everySplitOfAListParsesTheSameAsTheWhole() throws {
        // Two field lines are one list (RFC 9110 §5.3): splitting at a challenge boundary
        // changes nothing.
        let first = #"Digest realm="r", nonce="x", qop="auth""#
        let second = #"Basic realm="r, s""#
        let whole = try AuthChallenge.parse(headerValues: [first + ", " + second])
        let split = try AuthChallenge.parse(headerValues: [first, second])
        #expect(whole == split)
        #expect(whole.count == 2)
    }

    @Test(arguments: [
        (#"Digest realm="unterminated"#, "parameters"),
        (#"Digest realm="a", realm="b""#, "realm"),
        (#"Digest realm="a",, =b"#, "parameters"),
        ("Digest realm=\"a\" nonce=\"b\"", "parameters"),
        ("\"Digest\"", "scheme"),
        ("Basic\trealm=\"x\"", "scheme"),
        ("Digest realm=\"a\u{7}b\"", "parameters"),
    ])
    func refusesMalformedValues(value: String, parameter: String) {
        #expect(throws: ClientAuthError.badChallenge(parameter)) {
            try AuthChallenge.parse(headerValues: [value])
        }
    }

    @Test func boundsLengthChallengeCountAndParameterCount() {
        let long = "Digest realm=\"" + String(repeating: "a", count: AuthChallenge.maxValueLength) + "\""
        #expect(throws: ClientAuthError.badChallenge("length")) { try AuthChallenge.parse(headerValues: [long]) }
        let many = Array(repeating: "Basic", count: AuthChallenge.maxChallenges + 1)
        #expect(throws: ClientAuthError.badChallenge("count")) { try AuthChallenge.parse(headerValues: many) }
        let parameters = (0...AuthChallenge.maxParameters).map { "p\($0)=v" }.joined(separator: ", ")
        #expect(throws: ClientAuthError.badChallenge("parameters")) {
            try AuthChallenge.parse(headerValues: ["Digest " + parameters])
        }
    }

    @Test func neverTrapsOnAnyPrefixOfAHostileValue() {
        let value = #"Digest realm="x\"y", nonce="\\", qop=auth ,, NTLM ===, Negotiate a=b=, Basic realm=""#
        var bytes = Array(value.utf8)
        for cut in 0...bytes.count {
            _ = try? AuthChallenge.parse(headerValues: [String(decoding: bytes[..<cut], as: UTF8.self)])
        }
        bytes.reverse()
        _ = try? AuthChallenge.parse(headerValues: [String(decoding: bytes, as: UTF8.self)])
    }
}
