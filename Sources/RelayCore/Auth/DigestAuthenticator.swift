/// Proxy Digest authentication (RFC 7616) with `qop=auth`: issues challenges and verifies
/// responses against the stored HA1.
///
/// Nonces are random, remembered with their nonce-counts and expiry (`DigestNonceTable`),
/// so a replayed request is refused and an expired or unknown nonce earns `stale=true`.
/// Only a response that proves knowledge of the password moves a nonce-count or earns
/// `stale=true`: a guesser can neither burn a legitimate client's counts nor learn anything
/// from the stale flag. Time is supplied by the caller in seconds on a clock that does not
/// step (the relay passes the monotonic clock).
///
/// One authenticator serves a listener; it is `Sendable` and may be used from every loop.
/// A class, so that handing it to a request's verification retains one reference rather
/// than each of its fields.
public final class DigestAuthenticator: Sendable {
    /// Returns the raw `H(user:realm:password)` stored for a user, realm and algorithm, or
    /// nil when the user is unknown. Called synchronously, once per verification.
    public typealias HA1Lookup = (_ user: String, _ realm: String, _ algorithm: DigestAlgorithm) -> [UInt8]?
    /// Maps a hex `H(user:realm)` (lowercase) back to the user name, or nil.
    public typealias UserhashLookup = (_ userhash: String, _ realm: String, _ algorithm: DigestAlgorithm) -> String?

    /// What a `digest` auth directive configures.
    public struct Configuration: Sendable {
        /// The protection space shown to users.
        public var realm: String
        /// Offered algorithms, strongest first; one challenge each.
        public var algorithms: [DigestAlgorithm]
        /// Seconds a nonce stays fresh.
        public var nonceLifetime: UInt64
        /// Secret the `opaque` value is derived from, at least 32 bytes; instances sharing
        /// it send the same `opaque`.
        public var serverKey: [UInt8]
        /// Whether challenges invite `userhash=true`.
        public var offerUserhash: Bool
        /// Most nonces whose counts are remembered.
        public var trackedNonces: Int

        /// A configuration with the defaults: SHA-256 then MD5, 300 s nonces, userhash
        /// offered, 65536 tracked nonces.
        public init(realm: String,
                    serverKey: [UInt8],
                    algorithms: [DigestAlgorithm] = [.sha256, .md5],
                    nonceLifetime: UInt64 = 300,
                    offerUserhash: Bool = true,
                    trackedNonces: Int = 65536) {
            self.realm = realm
            self.serverKey = serverKey
            self.algorithms = algorithms
            self.nonceLifetime = nonceLifetime
            self.offerUserhash = offerUserhash
            self.trackedNonces = trackedNonces
        }
    }

    /// Forgets expired nonces and the HA1s proven with them, for a caller that sweeps
    /// periodically: without requests nothing else would.
    public func sweep(now: UInt64) {
        nonces.sweep(now: now)
    }

    /// The configuration in force.
    public let configuration: Configuration
    private let nonces: DigestNonceTable
    private let opaque: String

    /// An authenticator for `configuration`. The realm must be non-empty printable text and
    /// the algorithm list non-empty without repeats.
    public init(configuration: Configuration) {
        precondition(!configuration.realm.isEmpty && !AuthSyntax.containsControl(configuration.realm)
            && configuration.realm.utf8.count <= DigestCredentials.Bounds.realm, "invalid Digest realm")
        precondition(!configuration.algorithms.isEmpty
            && Set(configuration.algorithms).count == configuration.algorithms.count, "invalid Digest algorithm list")
        precondition(configuration.serverKey.count >= 32, "the Digest server key needs at least 32 bytes")
        self.configuration = configuration
        nonces = DigestNonceTable(capacity: configuration.trackedNonces, lifetime: configuration.nonceLifetime)
        // Derived from the key so every instance sharing the key sends the same value.
        let opaqueKey = AuthCrypto.hmacSHA256(key: configuration.serverKey, data: Array("dynrelay digest opaque v1".utf8))
        opaque = AuthCrypto.base64Encode(Array(opaqueKey.prefix(18)))
    }

    /// One challenge per offered algorithm, strongest first, sharing one newly issued
    /// nonce. `stale` marks the answer to a `.stale` verification.
    public func challenges(now: UInt64, stale: Bool = false) -> [DigestChallenge] {
        let nonce = nonces.issue(now: now)
        return configuration.algorithms.map {
            DigestChallenge(realm: configuration.realm, nonce: nonce, opaque: opaque, algorithm: $0,
                            stale: stale, userhash: configuration.offerUserhash)
        }
    }

    /// Verifies a `Proxy-Authorization` value; anything that does not parse as Digest
    /// credentials fails with `bad-request`.
    public func verify(_ authorization: ProxyAuthorization,
                       method: String,
                       requestTarget: String,
                       now: UInt64,
                       credentialsVersion: UInt64? = nil,
                       userForUserhash: UserhashLookup = { _, _, _ in nil },
                       ha1: HA1Lookup) -> DigestVerification {
        guard let credentials = try? DigestCredentials(authorization) else { return .failed(reason: .badRequest) }
        return verify(credentials, method: method, requestTarget: requestTarget, now: now,
                      credentialsVersion: credentialsVersion, userForUserhash: userForUserhash, ha1: ha1)
    }

    /// Verifies parsed credentials for a request with `method` and `requestTarget` (the
    /// target exactly as on the request line, which `uri` must equal).
    ///
    /// `ha1` returns the raw `H(user:realm:password)` for the algorithm, or nil for an
    /// unknown user. `userForUserhash` maps a hex `H(user:realm)` back to the user name;
    /// the default knows none, so userhash logins then fail as `unknown-user`.
    ///
    /// With a `credentialsVersion` (what `ha1` answers from; it must change whenever a user
    /// or password does), an HA1 proven with a still-fresh nonce is reused for the next
    /// requests on that nonce instead of being looked up again (`DigestNonceTable`).
    /// Without one (a helper answers) every request looks it up.
    public func verify(_ credentials: DigestCredentials,
                       method: String,
                       requestTarget: String,
                       now: UInt64,
                       credentialsVersion: UInt64? = nil,
                       userForUserhash: UserhashLookup = { _, _, _ in nil },
                       ha1: HA1Lookup) -> DigestVerification {
        credentials.withBytes { fields in
            verify(credentials, fields, method: method, requestTarget: requestTarget, now: now,
                   credentialsVersion: credentialsVersion, userForUserhash: userForUserhash, ha1: ha1)
        }
    }

    private func verify(_ credentials: DigestCredentials,
                        _ fields: DigestCredentials.Bytes,
                        method: String,
                        requestTarget: String,
                        now: UInt64,
                        credentialsVersion: UInt64?,
                        userForUserhash: UserhashLookup,
                        ha1: HA1Lookup) -> DigestVerification {
        let algorithm = credentials.algorithm
        // Byte comparisons: String's == would also accept canonically equivalent spellings.
        guard configuration.algorithms.contains(algorithm),
              AuthSyntax.sameBytes(fields.realm, configuration.realm),
              AuthSyntax.sameBytes(fields.uri, requestTarget),
              let returnedOpaque = fields.opaque, AuthSyntax.sameBytes(returnedOpaque, opaque),
              !credentials.userhash || configuration.offerUserhash
        else { return .failed(reason: .badRequest) }

        let user: String?
        if credentials.userhash {
            let hash = AuthSyntax.asciiLowercased(credentials.username)
            user = userForUserhash(hash, configuration.realm, algorithm)
                .flatMap { algorithm.userhash(user: $0, realm: configuration.realm) == hash ? $0 : nil }
        } else {
            user = credentials.username
        }
        // The nonce is looked up now but acted on only once the response proved the password:
        // a guesser learns nothing from `stale`, and moves no count.
        let key = DigestNonceTable.Key(bytes: fields.nonce)
        let lookup = key.map {
            nonces.lookup($0, now: now, user: user, algorithm: algorithm, version: credentialsVersion)
        } ?? .stale
        var proven: [UInt8]?
        if case .fresh(let ha1) = lookup { proven = ha1 }
        let storedHA1 = proven ?? user.flatMap { ha1($0, configuration.realm, algorithm) }
        if let storedHA1, storedHA1.count != algorithm.digestLength {
            return .failed(reason: .internalError)
        }
        // An unknown user costs the same hashing as a known one, so response time does not
        // tell which names exist.
        let matches = withUnsafeTemporaryAllocation(byteCount: algorithm.digestLength, alignment: 1) { expected in
            Self.response(ha1: storedHA1 ?? [UInt8](repeating: 0, count: algorithm.digestLength), method: method,
                          algorithm: algorithm, fields: fields, into: expected)
            return AuthCrypto.constantTimeEquals(UnsafeRawBufferPointer(expected), fields.response)
        }
        guard let user, let storedHA1 else { return .failed(reason: .unknownUser) }
        guard matches else { return .failed(reason: .badPassword) }
        guard let key, case .fresh = lookup else { return .stale }

        let proof = proven == nil ? credentialsVersion.map {
            DigestNonceTable.Proof(user: user, algorithm: algorithm, version: $0, ha1: storedHA1)
        } : nil
        switch nonces.record(key, count: credentials.nonceCount, now: now, proof: proof) {
        case .accepted: return .ok(user: user)
        case .replayed: return .failed(reason: .replayedNonce)
        case .stale: return .stale
        }
    }

    /// The response `credentials` should carry for `ha1` and `method`.
    static func response(ha1: [UInt8], method: String, credentials: DigestCredentials) -> [UInt8] {
        let algorithm = credentials.algorithm
        return [UInt8](unsafeUninitializedCapacity: algorithm.digestLength) { digest, count in
            credentials.withBytes { fields in
                response(ha1: ha1, method: method, algorithm: algorithm, fields: fields,
                         into: UnsafeMutableRawBufferPointer(digest))
            }
            count = algorithm.digestLength
        }
    }

    /// `H(hex(HA1) ":" nonce ":" nc ":" cnonce ":" qop ":" hex(H(method ":" uri)))` into
    /// `digest`, both hash inputs built in one temporary buffer: it runs for every Digest
    /// request, and building them as arrays (appending byte by byte, one array per hash and
    /// per result) cost more than the hashing.
    private static func response(ha1: [UInt8], method: String, algorithm: DigestAlgorithm,
                                 fields: DigestCredentials.Bytes, into digest: UnsafeMutableRawBufferPointer) {
        let length = algorithm.digestLength
        // The buffer below is sized for this HA1; its writes are not bounds-checked.
        precondition(ha1.count == length && digest.count >= length, "HA1 length does not match the algorithm")
        let capacity = max(method.utf8.count + 1 + fields.uri.count,
                           4 * length + fields.nonce.count + fields.nonceCount.count + fields.cnonce.count
                               + fields.qop.count + 5)
        withUnsafeTemporaryAllocation(byteCount: capacity + length, alignment: 1) { scratch in
            let ha2 = UnsafeMutableRawBufferPointer(rebasing: scratch[capacity...])
            var input = HashInput(UnsafeMutableRawBufferPointer(rebasing: scratch[..<capacity]))
            input.append(method)
            input.append(colon)
            input.append(fields.uri)
            algorithm.hash(input.bytes, into: ha2)

            input = HashInput(UnsafeMutableRawBufferPointer(rebasing: scratch[..<capacity]))
            ha1.withUnsafeBytes { input.appendHex($0) }
            // Spelled out: a loop over an array literal of the four could allocate it.
            input.append(colon)
            input.append(fields.nonce)
            input.append(colon)
            input.append(fields.nonceCount)
            input.append(colon)
            input.append(fields.cnonce)
            input.append(colon)
            input.append(fields.qop)
            input.append(colon)
            input.appendHex(UnsafeRawBufferPointer(ha2))
            algorithm.hash(input.bytes, into: digest)
        }
    }

    private static let colon = UInt8(ascii: ":")

    /// Bytes written into a buffer sized for them beforehand.
    private struct HashInput {
        private let buffer: UnsafeMutableRawBufferPointer
        private var count = 0

        init(_ buffer: UnsafeMutableRawBufferPointer) {
            self.buffer = buffer
        }

        var bytes: UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: buffer[..<count])
        }

        mutating func append(_ byte: UInt8) {
            buffer[count] = byte
            count += 1
        }

        mutating func append(_ text: String) {
            var text = text
            text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        }

        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + bytes.count]).copyMemory(from: bytes)
            count += bytes.count
        }

        /// Lowercase hex, as RFC 7616 spells digests inside the response.
        mutating func appendHex(_ raw: UnsafeRawBufferPointer) {
            AuthHex.write(raw, into: UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + 2 * raw.count]))
            count += 2 * raw.count
        }
    }
}
