/// Which request follows a 3xx response, or why none does.
///
/// The rules are the ones browsers and curl share: 301 and 302 turn a POST into a GET
/// without body, 303 turns everything but HEAD into a GET, 307 and 308 resend method and
/// body unchanged (so the body must be replayable). Credentials never follow to another
/// origin: `Authorization`, `Cookie` (the jar adds the right cookies for the new URL) and the
/// caller's origin-bound headers are dropped as soon as scheme, host or port changes, and
/// stay dropped for the rest of the chain.
public struct RedirectPolicy: Hashable, Sendable {
    /// Headers that never cross an origin. `Host` is here because a caller-set `Host` would
    /// name the old server to the new one.
    public static let originBoundHeaders = ["Authorization", "Cookie", "Host"]
    /// Headers describing a body, removed when the redirect drops the body.
    public static let bodyHeaders = ["Content-Length", "Content-Type", "Transfer-Encoding",
                                     "Content-Encoding", "Content-Language", "Content-Location"]

    /// Most redirects followed for one request.
    public var maxRedirects: Int
    /// Whether an https URL may redirect to an http one (its content then travels in clear).
    public var allowsHTTPSDowngrade: Bool

    /// A policy; by default 10 hops and no downgrade.
    public init(maxRedirects: Int = 10, allowsHTTPSDowngrade: Bool = false) {
        self.maxRedirects = maxRedirects
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
    }

    /// The request to send after `request` got `status` with `location`, or nil when the
    /// response is final (not a redirect status, or no `Location`).
    ///
    /// - Parameter redirectsFollowed: how many redirects this chain has followed already.
    public func next(after request: RedirectRequest, status: Int, location: String?,
                     redirectsFollowed: Int) throws(RedirectError) -> RedirectRequest? {
        guard [301, 302, 303, 307, 308].contains(status), let location else { return nil }
        guard redirectsFollowed < maxRedirects else { throw .tooManyRedirects }
        let target: ClientURL
        do {
            target = try request.url.resolving(location)
        } catch {
            throw .badLocation(error)
        }
        if request.url.scheme == .https, target.scheme == .http, !allowsHTTPSDowngrade {
            throw .insecureRedirect
        }

        var next = request
        next.url = target
        let becomesGET = (status == 301 || status == 302) ? request.method == "POST"
                       : status == 303 ? request.method != "HEAD"
                       : false
        if becomesGET {
            next.method = "GET"
            next.body = .none
            for name in Self.bodyHeaders { next.headers.remove(name) }
        } else if request.body == .oneShot {
            throw .bodyNotReplayable
        }
        if target.origin != request.url.origin {
            for name in Self.originBoundHeaders + request.originBoundHeaders { next.headers.remove(name) }
        }
        return next
    }
}
