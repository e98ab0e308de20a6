import Testing
@testable import RelayCore

/// Seeded mutation fuzzing of every parser that reads client bytes: each input either
/// parses or throws an `AuthError` (typed throws make anything else impossible to compile);
/// the point is that none traps. Failures reproduce from the seed.
@Suite struct AuthFuzzTests {
    static let iterations = 10_000
    static let interesting: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x2C, 0x3D, 0x5C, 0x7F, 0x80, 0xC3, 0xFF,
                                       0x2B, 0x2F, 0x41]

    static func mutate(_ seed: [UInt8], _ rng: inout SplitMix64, interestingBytes: [UInt8] = interesting) -> [UInt8] {
        var out = seed
        for _ in 0..<Int.random(in: 1...6, using: &rng) {
            let position = out.isEmpty ? 0 : Int.random(in: 0..<out.count, using: &rng)
            let byte = Bool.random(using: &rng) ? interestingBytes.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0 where !out.isEmpty: out[position] = byte
            case 1: out.insert(byte, at: position)
            case 2 where !out.isEmpty: out.remove(at: position)
            case 3 where !out.isEmpty:
                let end = min(out.count, position + Int.random(in: 1...16, using: &rng))
                out.insert(contentsOf: Array(out[position..<end]), at: position)
            case 4 where out.count >= 4:
                // Overwrite a little-endian 16/32-bit value with an extreme, as NTLM lengths
                // and offsets are.
                let extremes: [UInt32] = [0, 1, 0x7FFF, 0xFFFF, 0x8000_0000, 0xFFFF_FFFF, UInt32(out.count), UInt32(out.count + 1)]
                let value = extremes.randomElement(using: &rng)!
                let start = Int.random(in: 0...(out.count - 4), using: &rng)
                for offset in 0..<4 { out[start + offset] = UInt8(truncatingIfNeeded: value >> (8 * offset)) }
            case 5:
                out = Array(out[0..<position])
            default:
                out.append(byte)
            }
        }
        return out
    }

    static let digestSeeds = [
        #"Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#,
        #"Digest username*=UTF-8''J%C3%A4s%C3%B8n%20Doe, realm="a\"b", uri="x:443", nonce=n, nc=0000000a, cnonce="\\", qop=auth, response="8ca523f5e9506fed4657c9700eebdbec", userhash=false"#,
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "NTLM TlRMTVNTUAABAAAAB4IIAAAAAAAAAAAAAAAAAAAAAAA=",
    ]

    @Test func digestHeadersNeverTrap() {
        var rng = SplitMix64(state: 0xD16E57)
        let authenticator = DigestAuthenticator(configuration: .init(realm: "http-auth@example.org",
                                                                     serverKey: [UInt8](repeating: 1, count: 32)))
        var outcomes = (parsed: 0, refused: 0)
        for _ in 0..<Self.iterations {
            let bytes = Self.mutate(Array(Self.digestSeeds.randomElement(using: &rng)!.utf8), &rng)
            // Field values reach us as Strings: invalid UTF-8 is repaired by the HTTP layer.
            let value = String(decoding: bytes, as: UTF8.self)
            do {
                let authorization = try ProxyAuthorization(parsing: value)
                outcomes.parsed += 1
                if authorization.hasScheme("Digest") {
                    _ = try? DigestCredentials(authorization)
                    _ = authorization.parameters.map { _ in
                        authenticator.verify(authorization, method: "GET", requestTarget: "/dir/index.html", now: 0,
                                             ha1: { _, _, algorithm in [UInt8](repeating: 7, count: algorithm.digestLength) })
                    }
                } else if authorization.hasScheme("Basic") {
                    _ = try? BasicCredentials(authorization)
                }
            } catch {
                outcomes.refused += 1
            }
            // The list parser alone, on the raw (possibly non-UTF-8) bytes.
            _ = try? AuthParameters(parsing: bytes[...], maxCount: 8)
        }
        #expect(outcomes.parsed > 100 && outcomes.refused > 100)
    }

    /// The span-recording list parser against a plain one written straight from the grammar
    /// (the shape the parser had before it recorded spans), on mutated Digest values parsed
    /// from a slice that starts partway into its buffer, as ProxyAuthorization hands it over.
    @Test func authParamListsMatchAPlainParser() {
        var rng = SplitMix64(state: 0xA11CE5)
        var compared = (parsed: 0, refused: 0)
        for _ in 0..<Self.iterations {
            let seed = Array(Self.digestSeeds[Int.random(in: 0...1, using: &rng)].utf8.dropFirst(7))
            let list = Self.mutate(seed, &rng)
            let prefix = [UInt8](repeating: UInt8(ascii: "x"), count: Int.random(in: 0...9, using: &rng))
            let buffer = prefix + list
            let maxCount = Int.random(in: 1...12, using: &rng)
            let expected = PlainAuthParamParser.parse(list, maxCount: maxCount)
            let actual = Result { () throws(AuthError) in
                try AuthParameters(parsing: buffer[prefix.count...], maxCount: maxCount).parameters
            }
            #expect(actual == expected, "\(String(decoding: list, as: UTF8.self))")
            if case .success = expected { compared.parsed += 1 } else { compared.refused += 1 }
        }
        #expect(compared.parsed > 100 && compared.refused > 100)
    }

    @Test func base64NeverTraps() {
        var rng = SplitMix64(state: 0xBA5E64)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        var decoded = 0
        for iteration in 0..<Self.iterations {
            let length = Int.random(in: 0...40, using: &rng)
            let input: [UInt8]
            if iteration % 2 == 0 {
                input = Self.mutate(Array(AuthCrypto.base64Encode((0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }).utf8),
                                    &rng, interestingBytes: alphabet + [0x20, 0x2D, 0x5F, 0x0A])
            } else {
                input = (0..<length).map { _ in alphabet.randomElement(using: &rng)! }
            }
            if let bytes = try? AuthCrypto.base64Decode(utf8: input, maxDecodedCount: Int.random(in: 0...40, using: &rng)) {
                decoded += 1
                // Whatever decodes is canonical: it re-encodes to the same text.
                #expect(Array(AuthCrypto.base64Encode(bytes).utf8) == input)
            }
        }
        #expect(decoded > 100)
    }

    @Test func ntlmMessagesNeverTrap() {
        var rng = SplitMix64(state: 0x4E544C4D)
        let flags: NTLMNegotiateFlags = [.unicode, .ntlm, .extendedSessionSecurity, .targetInfo]
        let type1 = Array("NTLMSSP".utf8) + [0, 1, 0, 0, 0] + AuthVectors.le32(Int(flags.rawValue))
            + AuthVectors.le16(3) + AuthVectors.le16(3) + AuthVectors.le32(32) + [UInt8](repeating: 0, count: 8) + Array("DOM".utf8)
        let type3 = AuthNTLMTests.authenticateMessage(user: "User", domain: "Domain", lm: [UInt8](repeating: 0, count: 24),
                                                    nt: AuthNTLMTests.ntProofStr + AuthNTLMTests.blob, flags: flags)
        let type3ESS = AuthNTLMTests.authenticateMessage(user: "User", domain: "Domain", lm: AuthNTLMTests.essLMResponse,
                                                       nt: AuthNTLMTests.essResponse, flags: flags, withVersion: true)
        var parsed = (negotiate: 0, authenticate: 0)
        for iteration in 0..<Self.iterations {
            let seed = [type1, type3, type3ESS][iteration % 3]
            let message = Self.mutate(seed, &rng)
            if (try? NTLMNegotiateMessage(parsing: message)) != nil { parsed.negotiate += 1 }
            if let authenticate = try? NTLMAuthenticateMessage(parsing: message) {
                parsed.authenticate += 1
                _ = NTLMVerifier.verify(authenticate, serverChallenge: AuthNTLMTests.serverChallenge,
                                        ntHash: { _, _ in AuthNTLMTests.ntHashOfPassword })
            }
            // And through the handshake, in both states.
            var handshake = AuthNTLMTests.handshake()
            if iteration % 2 == 0 { _ = handshake.receive(message: type1, unixTime: 0, ntHash: AuthNTLMTests.users) }
            _ = handshake.receive(message: message, unixTime: 0, ntHash: AuthNTLMTests.users)
        }
        #expect(parsed.negotiate > 100 && parsed.authenticate > 100)
    }
}

/// `#auth-param` (RFC 9110 §11.2, §5.6) parsed the plain way, one byte at a time into strings:
/// the reference `authParamListsMatchAPlainParser` holds the production parser to.
enum PlainAuthParamParser {
    /// tchar spelled out as RFC 9110 §5.6.2 lists it, apart from the production bit masks.
    static let tokenChars = Set(Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8))

    static func isTokenChar(_ byte: UInt8) -> Bool { tokenChars.contains(byte) }

    static func parse(_ bytes: [UInt8], maxCount: Int) -> Result<[AuthParameters.Parameter], AuthError> {
        var result: [AuthParameters.Parameter] = []
        var index = 0
        func skipWhitespace() { while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        while true {
            while index < bytes.count, bytes[index] == UInt8(ascii: ",") || bytes[index] == 0x20 || bytes[index] == 0x09 {
                index += 1
            }
            if index == bytes.count { return .success(result) }
            let nameStart = index
            while index < bytes.count, isTokenChar(bytes[index]) { index += 1 }
            guard index > nameStart else { return .failure(.malformedHeader) }
            let name = String(decoding: bytes[nameStart..<index].map(HTTPBytes.asciiLowercased), as: UTF8.self)
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return .failure(.malformedHeader) }
            index += 1
            skipWhitespace()
            guard index < bytes.count else { return .failure(.malformedHeader) }
            var value: [UInt8] = []
            let quoted = bytes[index] == UInt8(ascii: "\"")
            if quoted {
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") { closed = true; break }
                    if byte == UInt8(ascii: "\\") {
                        guard index < bytes.count else { return .failure(.malformedHeader) }
                        let escaped = bytes[index]
                        index += 1
                        guard escaped == 0x09 || (escaped >= 0x20 && escaped != 0x7F) else { return .failure(.malformedHeader) }
                        value.append(escaped)
                    } else {
                        guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else { return .failure(.malformedHeader) }
                        value.append(byte)
                    }
                }
                guard closed else { return .failure(.malformedHeader) }
            } else {
                while index < bytes.count, isTokenChar(bytes[index]) { value.append(bytes[index]); index += 1 }
                guard !value.isEmpty else { return .failure(.malformedHeader) }
            }
            guard let text = String(validating: value, as: UTF8.self) else { return .failure(.badParameter(name)) }
            guard !result.contains(where: { $0.name == name }) else { return .failure(.duplicateParameter(name)) }
            guard result.count < maxCount else { return .failure(.tooManyParameters) }
            result.append(AuthParameters.Parameter(name: name, value: text, wasQuoted: quoted))
            skipWhitespace()
            if index == bytes.count { return .success(result) }
            guard bytes[index] == UInt8(ascii: ",") else { return .failure(.malformedHeader) }
        }
    }
}
