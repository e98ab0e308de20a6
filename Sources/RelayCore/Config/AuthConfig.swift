/// The proxy-authentication part of a configuration: which schemes a `407` offers, where
/// their credentials come from, and how failures lock attackers out.
public struct AuthConfig: Sendable, Equatable {
    /// A scheme a listener can ask for, strongest first in `allCases` order: that is the
    /// order of `Proxy-Authenticate` fields in a `407` (RFC 7235 lets a client pick the
    /// first it supports).
    public enum Scheme: String, Sendable, CaseIterable, Comparable {
        case negotiate
        case ntlm
        case digest
        case basic

        /// The scheme name on the wire.
        public var wireName: String {
            switch self {
            case .negotiate: "Negotiate"
            case .ntlm: "NTLM"
            case .digest: "Digest"
            case .basic: "Basic"
            }
        }

        /// Whether a success authenticates the TCP connection rather than one request.
        public var isConnectionBound: Bool { self == .negotiate || self == .ntlm }

        public static func < (a: Scheme, b: Scheme) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// `auth basic [realm=R]`.
    public struct Basic: Sendable, Equatable {
        public var realm: String
        public init(realm: String = AuthConfig.defaultRealm) { self.realm = realm }
    }

    /// `auth digest [realm=R] [algorithm=SHA-256,MD5] [nonce-ttl=D]`.
    public struct Digest: Sendable, Equatable {
        public var realm: String
        /// Offered strongest first, one challenge each.
        public var algorithms: [DigestAlgorithm]
        public var nonceLifetime: Duration
        public init(realm: String = AuthConfig.defaultRealm, algorithms: [DigestAlgorithm] = [.sha256, .md5],
                    nonceLifetime: Duration = .seconds(300)) {
            self.realm = realm
            self.algorithms = algorithms
            self.nonceLifetime = nonceLifetime
        }
    }

    /// `auth ntlm [domain=D]`.
    public struct NTLM: Sendable, Equatable {
        /// NetBIOS domain name announced in the CHALLENGE.
        public var domain: String
        public init(domain: String = "DYNRELAY") { self.domain = domain }
    }

    /// `auth negotiate [keytab=PATH] [principal=NAME]`.
    public struct Negotiate: Sendable, Equatable {
        public var keytab: String?
        /// The acceptor name (`HTTP/proxy.example.com@REALM`); nil accepts any key in the keytab.
        public var principal: String?
        public init(keytab: String? = nil, principal: String? = nil) {
            self.keytab = keytab
            self.principal = principal
        }
    }

    /// `auth client-cert`: a client certificate verified on an HTTPS listener (one with
    /// `client-ca=`) names the principal: its first SAN email address, else its subject CN.
    /// It is tried before any `407` scheme; a client without one is asked for those.
    public struct ClientCertificate: Sendable, Equatable {
        /// Where `auth client-cert` was written.
        public var location: SourceLocation
        public init(location: SourceLocation) { self.location = location }
    }

    /// `auth-helper SCHEME [children=N] [concurrency=M] COMMAND ARGS…`: credentials for that
    /// scheme come from a Squid-protocol helper instead of the built-in user store.
    public struct Helper: Sendable, Equatable {
        public var scheme: Scheme
        public var argv: [String]
        /// Helper processes kept running.
        public var children: Int
        /// Requests in flight per process (channel ids); 0 for the stateful schemes.
        public var concurrency: Int
        public var location: SourceLocation
        public init(scheme: Scheme, argv: [String], children: Int, concurrency: Int, location: SourceLocation) {
            self.scheme = scheme
            self.argv = argv
            self.children = children
            self.concurrency = concurrency
            self.location = location
        }
    }

    /// `auth-lockout [failures=N] [source-failures=N] [window=D] [duration=D]`.
    public struct Lockout: Sendable, Equatable {
        /// Failures for one principal within `window` that lock it against the sources that failed.
        public var principalFailures: Int
        /// Failures from one source address within `window` that lock that address out.
        public var sourceFailures: Int
        public var window: Duration
        public var duration: Duration
        public init(principalFailures: Int = 5, sourceFailures: Int = 20, window: Duration = .seconds(300),
                    duration: Duration = .seconds(900)) {
            self.principalFailures = principalFailures
            self.sourceFailures = sourceFailures
            self.window = window
            self.duration = duration
        }
    }

    /// The realm when the config names none.
    public static let defaultRealm = "dynrelay"

    /// True when the config says `auth none`: no listener asks for credentials, on purpose.
    public var explicitlyNone = false
    public var basic: Basic?
    public var digest: Digest?
    public var ntlm: NTLM?
    public var negotiate: Negotiate?
    /// Not among `schemes`: a certificate is presented in the TLS handshake, never answered
    /// to a `407` challenge.
    public var clientCertificate: ClientCertificate?
    public var helpers: [Helper] = []
    public var lockout = Lockout()
    /// `user-key-file PATH`: the key that seals password-equivalent secrets in the user store.
    public var userKeyFile: String?
    /// `auth-cache-ttl D`: how long a verified Basic credential skips the slow KDF, kept as
    /// a keyed hash (never the password); 0 turns the cache off.
    public var cacheTTL: Duration = .seconds(60)

    public init() {}

    /// The `407` schemes configured, strongest first (`auth client-cert` is not one).
    public var schemes: [Scheme] {
        var result: [Scheme] = []
        if negotiate != nil { result.append(.negotiate) }
        if ntlm != nil { result.append(.ntlm) }
        if digest != nil { result.append(.digest) }
        if basic != nil { result.append(.basic) }
        return result
    }

    /// Whether requests must authenticate (by a `407` scheme or a client certificate).
    public var isRequired: Bool { !schemes.isEmpty || acceptsClientCertificate }

    /// Whether a verified client certificate authenticates its connection (`auth client-cert`).
    public var acceptsClientCertificate: Bool { clientCertificate != nil }

    /// The helper that serves `scheme`, if any.
    public func helper(for scheme: Scheme) -> Helper? {
        helpers.first { $0.scheme == scheme }
    }

    /// The Digest realm the user store derives HA1 values for (Basic's realm if only Basic).
    public var storeRealm: String {
        digest?.realm ?? basic?.realm ?? Self.defaultRealm
    }
}
