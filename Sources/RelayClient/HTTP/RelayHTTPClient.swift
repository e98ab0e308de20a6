import Foundation
import RelayCore
import Synchronization

/// An async HTTP/1.1 client through relays: `http://` URLs as absolute-form requests to
/// the relay, `https://` URLs through a `CONNECT` tunnel with end-to-end TLS; kept-alive
/// connections pooled per relay (absolute-form) and per origin through a relay (tunnels);
/// `407` and `401` answered through `ClientAuthSession`; cookies in a `CookieJar`; redirects
/// by `RedirectPolicy`; another relay tried only when `RetryDecision` says the request
/// cannot have reached the server.
public final class RelayHTTPClient: Sendable {
    /// Most requests one call sends for authentication legs and stale-connection retries.
    static let maxAttempts = 12

    /// What the client was made with.
    public let configuration: RelayHTTPClientConfiguration
    let pool: HTTPConnectionPool
    let jar: Mutex<CookieJar>

    /// A client; loads `configuration.cookieFile` when it exists.
    public init(configuration: RelayHTTPClientConfiguration) {
        self.configuration = configuration
        pool = HTTPConnectionPool(maxIdle: configuration.maxIdle, maxIdlePerKey: configuration.maxIdlePerKey)
        var jar = CookieJar()
        if let path = configuration.cookieFile, let text = try? String(contentsOfFile: path, encoding: .utf8) {
            _ = jar.load(netscapeFile: text)
        }
        self.jar = Mutex(jar)
    }

    deinit {
        pool.closeAll()
    }

    /// The cookies stored so far.
    public var cookies: [Cookie] { jar.withLock { $0.cookies } }

    /// Closes every idle connection.
    public func closeIdleConnections() {
        pool.closeAll()
    }

    /// Sends `request` and returns the response once its head arrived; its body streams
    /// from the connection as it is read. Redirects and authentication legs happen inside.
    public func execute(_ request: RelayHTTPClientRequest) async throws(RelayHTTPError) -> RelayHTTPResponse {
        var current = RedirectRequest(method: request.method, url: request.url, headers: request.headers,
                                      body: request.body.kind, originBoundHeaders: request.originBoundHeaders)
        var body = request.body
        var serverCredentials = request.serverCredentials ?? configuration.serverCredentials
        var followed = 0
        while true {
            let response = try await executeOnRelays(current, body: body, serverCredentials: serverCredentials)
            guard let policy = configuration.redirects else { return response }
            let next: RedirectRequest?
            do throws(RedirectError) {
                next = try policy.next(after: current, status: response.status, location: response.headers.first("location"),
                                       redirectsFollowed: followed)
            } catch {
                await response.body.cancel()
                let code: RelayHTTPError.Code = error == .bodyNotReplayable ? .bodyNotReplayable : .redirectFailed
                throw RelayHTTPError(code, "cannot follow the redirect from \(current.url): \(error)", httpStatus: response.status)
            }
            guard let next else { return response }
            try await drain(response.body)
            if next.url.origin != current.url.origin {
                // Credentials belong to the origin they were given for, for the rest of the chain.
                serverCredentials = nil
            }
            if next.body == .none { body = .empty }
            current = next
            followed += 1
        }
    }

    /// `execute` for a URL string and optional bytes.
    public func execute(_ method: String, _ url: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil) async throws(RelayHTTPError) -> RelayHTTPResponse {
        let parsed: ClientURL
        do throws(ClientURLError) {
            parsed = try ClientURL(parsing: url)
        } catch {
            throw RelayHTTPError(.invalidRequest, "bad URL: \(error)")
        }
        return try await execute(RelayHTTPClientRequest(method: method, url: parsed, headers: HTTPHeaders(headers),
                                                        body: body.map { .bytes($0) } ?? .empty))
    }

    /// Tries relays as the `RelaySelector` picks them until one carries the request, or
    /// `RetryDecision` forbids sending it again.
    private func executeOnRelays(_ request: RedirectRequest, body: RelayHTTPBody,
                                 serverCredentials: ClientCredentials?) async throws(RelayHTTPError) -> RelayHTTPResponse {
        var tried: Set<RelayEndpoint> = []
        var lastError: RelayHTTPError?
        while let relay = configuration.selector.select(excluding: tried) {
            tried.insert(relay)
            if Task.isCancelled { throw .transport(.cancelledTask, "before relay \(relay)") }
            do throws(HTTPAttemptFailure) {
                let response = try await exchange(request, body: body, on: relay, serverCredentials: serverCredentials)
                configuration.selector.recordSuccess(relay)
                return response
            } catch {
                if error.relayAtFault { configuration.selector.recordFailure(relay) }
                guard let retry = error.retry, RetryDecision(failure: retry, method: request.method, body: body.kind).mayResend else {
                    throw error.error
                }
                lastError = error.error
            }
        }
        throw lastError ?? RelayHTTPError(.transport, "no relay is available",
                                          transport: RelayClientError(.relayUnreachable, "every relay is in back-off"))
    }

    /// Reads a body the caller will not see, so its connection can be reused; a long one
    /// closes the connection instead.
    func drain(_ body: RelayHTTPResponseBody) async throws(RelayHTTPError) {
        var seen = 0
        while let chunk = try await body.source.next() {
            seen += chunk.count
            if seen > configuration.maxDrainBytes {
                await body.cancel()
                return
            }
        }
    }

    /// Stores the cookies of a response and rewrites the cookie file when asked to.
    func storeCookies(_ headers: HTTPHeaders, from url: ClientURL) {
        guard configuration.cookies, headers.contains("set-cookie") else { return }
        let file: String? = jar.withLock { jar in
            _ = jar.receive(responseHeaders: headers, from: url)
            return configuration.cookieFile == nil ? nil : jar.netscapeFile
        }
        if let file, let path = configuration.cookieFile {
            try? Data(file.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    /// The `Cookie` value for `url`.
    func cookieHeader(for url: ClientURL) -> String? {
        guard configuration.cookies else { return nil }
        return jar.withLock { $0.cookieHeader(for: url) }
    }
}
