/// A stored cookie with the fields of RFC 6265 §5.3. Times are seconds since the Unix epoch.
public struct Cookie: Hashable, Sendable {
    /// The cookie's name, as received.
    public var name: String
    /// The cookie's value, as received.
    public var value: String
    /// The host (host-only) or the domain (and its subdomains) the cookie is sent to.
    public var domain: String
    /// The path prefix the cookie is sent under.
    public var path: String
    /// When the cookie expires; nil for a session cookie, which lasts until
    /// `CookieJar.removeSessionCookies()`.
    public var expiry: Int64?
    /// Sent only to exactly `domain`, not to its subdomains (no `Domain` attribute was given).
    public var hostOnly: Bool
    /// Sent only over https.
    public var secureOnly: Bool
    /// Set with `HttpOnly`. This is an HTTP API, so such cookies are sent like any other;
    /// the flag is kept so a script-facing layer could withhold them and so files round-trip.
    public var httpOnly: Bool
    /// When the cookie was first stored (kept when a later `Set-Cookie` replaces it).
    public var creationTime: Int64
    /// When the cookie was last sent or stored; the least recently used go first when a limit is hit.
    public var lastAccessTime: Int64
    /// Breaks ties between equal creation times, which a coarse clock makes common.
    var creationSequence: UInt64

    /// Creates a cookie from its fields.
    public init(name: String, value: String, domain: String, path: String, expiry: Int64?,
                hostOnly: Bool, secureOnly: Bool, httpOnly: Bool, creationTime: Int64, lastAccessTime: Int64) {
        self.name = name
        self.value = value
        self.domain = domain
        self.path = path
        self.expiry = expiry
        self.hostOnly = hostOnly
        self.secureOnly = secureOnly
        self.httpOnly = httpOnly
        self.creationTime = creationTime
        self.lastAccessTime = lastAccessTime
        self.creationSequence = 0
    }

    /// Whether the cookie outlives the session (it had `Expires` or `Max-Age`).
    public var isPersistent: Bool { expiry != nil }

    /// Whether the cookie has expired at `now`.
    public func isExpired(at now: Int64) -> Bool {
        guard let expiry else { return false }
        return expiry <= now
    }

    /// Name, domain and path: a new cookie with the same three replaces the old one.
    var identity: CookieIdentity { CookieIdentity(name: name, domain: domain, path: path) }
}

/// The key under which §5.3 step 11 replaces a stored cookie.
struct CookieIdentity: Hashable {
    var name: String
    var domain: String
    var path: String
}
