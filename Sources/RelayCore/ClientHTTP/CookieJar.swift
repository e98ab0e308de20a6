#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An RFC 6265 §5 cookie store for an HTTP client: what `Set-Cookie` may store (§5.3) and
/// what a request carries back (§5.4).
///
/// A value type with no locking of its own: the HTTP client owns one and serialises access.
/// The clock is injected so tests control expiry; time is seconds since the Unix epoch.
public struct CookieJar: Sendable {
    /// Largest `Set-Cookie` value (name, value and attributes) stored.
    public static let maxCookieSize = 4096
    /// Most cookies kept for one domain before the least recently used goes.
    public static let maxCookiesPerDomain = 50
    /// Most cookies kept in all before the least recently used goes.
    public static let maxCookies = 3000
    /// Wall-clock seconds since the epoch.
    public static let systemClock: @Sendable () -> Int64 = { Int64(time(nil)) }

    private let publicSuffixes: PublicSuffixList
    let clock: @Sendable () -> Int64
    private var store: [CookieIdentity: Cookie] = [:]
    private var nextSequence: UInt64 = 0

    /// An empty jar.
    public init(publicSuffixes: PublicSuffixList = .builtIn, clock: @escaping @Sendable () -> Int64 = CookieJar.systemClock) {
        self.publicSuffixes = publicSuffixes
        self.clock = clock
    }

    /// Every unexpired cookie, oldest first.
    public var cookies: [Cookie] {
        let now = clock()
        return store.values.filter { !$0.isExpired(at: now) }.sorted { $0.creationSequence < $1.creationSequence }
    }

    /// Stores the cookie of one `Set-Cookie` value received in a response to `url`
    /// (§5.3). Returns the cookie as stored, or nil when the field deleted one (an expiry in
    /// the past). Throws when the cookie is refused; nothing in the jar changes then.
    @discardableResult
    public mutating func receive(setCookie text: String, from url: ClientURL) throws(CookieError) -> Cookie? {
        guard let parsed = SetCookie(parsing: text) else { throw .malformed }
        guard text.utf8.count <= Self.maxCookieSize else { throw .tooLarge(parsed.name) }
        let now = clock()
        let host = url.cookieHost
        let hostIsName = if case .name = url.host { true } else { false }

        var domain = parsed.domain ?? ""
        if !domain.isEmpty, hostIsName, publicSuffixes.isPublicSuffix(domain) {
            // §5.3 step 5: a suffix naming the host itself is a plain host-only cookie.
            guard domain == host else { throw .publicSuffix(parsed.name) }
            domain = ""
        }
        if !domain.isEmpty, !CookieMatching.domainMatches(host: host, domain: domain, hostIsName: hostIsName) {
            throw .domainMismatch(parsed.name)
        }

        let expiry: Int64?
        if let maxAge = parsed.maxAge {
            expiry = maxAge <= 0 ? Int64.min : now.addingReportingOverflow(maxAge).overflow ? Int64.max : now + maxAge
        } else {
            expiry = parsed.expires
        }
        var cookie = Cookie(name: parsed.name, value: parsed.value,
                            domain: domain.isEmpty ? host : domain,
                            path: parsed.path ?? CookieMatching.defaultPath(requestPath: url.path),
                            expiry: expiry, hostOnly: domain.isEmpty,
                            secureOnly: parsed.secure, httpOnly: parsed.httpOnly,
                            creationTime: now, lastAccessTime: now)
        return insert(&cookie, now: now)
    }

    /// Stores every `Set-Cookie` of a response; returns the refusals, in field order.
    @discardableResult
    public mutating func receive(responseHeaders: HTTPHeaders, from url: ClientURL) -> [CookieError] {
        var refused: [CookieError] = []
        for value in responseHeaders.values("Set-Cookie") {
            do { try receive(setCookie: value, from: url) } catch { refused.append(error) }
        }
        return refused
    }

    /// The cookies a request to `url` carries, in §5.4 order (longer paths first, then
    /// earlier creation), marked as used now.
    public mutating func cookies(for url: ClientURL) -> [Cookie] {
        let now = clock()
        removeExpired(at: now)
        let host = url.cookieHost
        let hostIsName = if case .name = url.host { true } else { false }
        let path = url.path
        var matching = store.values.filter { cookie in
            (cookie.hostOnly ? host == cookie.domain
                             : CookieMatching.domainMatches(host: host, domain: cookie.domain, hostIsName: hostIsName))
                && CookieMatching.pathMatches(requestPath: path, cookiePath: cookie.path)
                && (!cookie.secureOnly || url.scheme == .https)
        }
        matching.sort { a, b in
            if a.path.utf8.count != b.path.utf8.count { return a.path.utf8.count > b.path.utf8.count }
            if a.creationTime != b.creationTime { return a.creationTime < b.creationTime }
            return a.creationSequence < b.creationSequence
        }
        for index in matching.indices {
            matching[index].lastAccessTime = now
            store[matching[index].identity]?.lastAccessTime = now
        }
        return matching
    }

    /// The `Cookie` header value for a request to `url`, or nil when no cookie applies.
    public mutating func cookieHeader(for url: ClientURL) -> String? {
        let cookies = cookies(for: url)
        guard !cookies.isEmpty else { return nil }
        return cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Stores a cookie read from elsewhere (a cookie file) under the same replacement and
    /// limit rules as a received one; expired cookies are dropped.
    public mutating func insert(_ cookie: Cookie) {
        var cookie = cookie
        insert(&cookie, now: clock())
    }

    /// Drops the cookies without an expiry, as when a browsing session ends.
    public mutating func removeSessionCookies() {
        store = store.filter { $0.value.isPersistent }
    }

    /// Drops every cookie.
    public mutating func removeAll() {
        store.removeAll()
    }

    /// §5.3 steps 11 and 12, then the eviction the section asks for.
    @discardableResult
    private mutating func insert(_ cookie: inout Cookie, now: Int64) -> Cookie? {
        if let old = store.removeValue(forKey: cookie.identity) {
            cookie.creationTime = old.creationTime
            cookie.creationSequence = old.creationSequence
        } else {
            cookie.creationSequence = nextSequence
            nextSequence += 1
        }
        guard !cookie.isExpired(at: now) else { return nil }
        store[cookie.identity] = cookie
        removeExpired(at: now)
        let sameDomain = store.values.filter { $0.domain == cookie.domain }
        if sameDomain.count > Self.maxCookiesPerDomain {
            evictLeastRecentlyUsed(sameDomain, count: sameDomain.count - Self.maxCookiesPerDomain)
        }
        if store.count > Self.maxCookies {
            evictLeastRecentlyUsed(Array(store.values), count: store.count - Self.maxCookies)
        }
        return store[cookie.identity]
    }

    private mutating func evictLeastRecentlyUsed(_ candidates: [Cookie], count: Int) {
        let victims = candidates.sorted { a, b in
            a.lastAccessTime != b.lastAccessTime ? a.lastAccessTime < b.lastAccessTime : a.creationSequence < b.creationSequence
        }.prefix(count)
        for victim in victims { store.removeValue(forKey: victim.identity) }
    }

    private mutating func removeExpired(at now: Int64) {
        // Checked first: rebuilding the store on every request would cost more than matching.
        guard store.values.contains(where: { $0.isExpired(at: now) }) else { return }
        store = store.filter { !$0.value.isExpired(at: now) }
    }
}
