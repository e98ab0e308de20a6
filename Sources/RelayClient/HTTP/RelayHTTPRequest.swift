import Dispatch
import RelayCore
import Synchronization

/// An XHR-style request object with the names GDHttpRequest users know: `open`,
/// `setRequestHeader`, `send`, `abort`, `readyState` moving through `UNSENT`, `OPENED`,
/// `SENT`, `HEADERS_RECEIVED`, `LOADING`, `DONE`, then `status`, `statusText`, the response
/// headers and the body as `responseText`/`responseData`. Every state change calls
/// `onReadyStateChange` on the queue given at creation.
///
/// It runs on a `RelayHTTPClient`, so relays, proxy credentials, TLS, cookies and redirects
/// are the client's; `open`'s user and password answer the server's `401`. The body is
/// kept whole (that is what the API hands out), up to `maxResponseBytes`; stream larger
/// bodies with `RelayHTTPClient.execute` instead.
public final class RelayHTTPRequest: Sendable {
    /// Where the request is, as XHR numbers it.
    public enum ReadyState: Int, Sendable {
        // The seed's names, kept as app developers know them.
        case UNSENT = 0, OPENED, SENT, HEADERS_RECEIVED, LOADING, DONE
    }

    private struct State: Sendable {
        var readyState = ReadyState.UNSENT
        var generation = 0
        var method = "GET"
        var url: ClientURL?
        var isAsync = true
        var credentials: ClientCredentials?
        var headers = HTTPHeaders()
        var status = 0
        var statusText = ""
        var responseHeaders: HTTPHeaders?
        var body: [UInt8] = []
        var error: RelayHTTPError?
        var task: Task<Void, Never>?
        var onReadyStateChange: (@Sendable (RelayHTTPRequest) -> Void)?
    }

    /// The client the request goes through.
    public let client: RelayHTTPClient
    /// The queue `onReadyStateChange` is called on.
    public let callbackQueue: DispatchQueue
    /// Most body bytes kept; a longer body ends the request with `invalid-request`.
    public let maxResponseBytes: Int
    private let state = Mutex(State())

    /// A request object through `client`, calling back on `callbackQueue`.
    public init(client: RelayHTTPClient, callbackQueue: DispatchQueue, maxResponseBytes: Int = 64 << 20) {
        self.client = client
        self.callbackQueue = callbackQueue
        self.maxResponseBytes = maxResponseBytes
    }

    /// Called on `callbackQueue` after every change of `readyState`.
    public var onReadyStateChange: (@Sendable (RelayHTTPRequest) -> Void)? {
        get { state.withLock { $0.onReadyStateChange } }
        set { state.withLock { $0.onReadyStateChange = newValue } }
    }

    /// The current state.
    public var readyState: ReadyState { state.withLock { $0.readyState } }
    /// The response status; 0 before the head arrived or when the request failed.
    public var status: Int { state.withLock { $0.status } }
    /// The reason phrase.
    public var statusText: String { state.withLock { $0.statusText } }
    /// Why the request failed, once `DONE` with status 0.
    public var error: RelayHTTPError? { state.withLock { $0.error } }
    /// The body so far, from `LOADING` on.
    public var responseData: [UInt8]? {
        state.withLock { $0.readyState.rawValue >= ReadyState.LOADING.rawValue ? $0.body : nil }
    }
    /// The body so far as UTF-8 text (invalid bytes replaced), from `LOADING` on.
    public var responseText: String? { responseData.map { String(decoding: $0, as: UTF8.self) } }

    /// Prepares a request; any request under way is aborted first. Returns false when
    /// `method` or `url` cannot be used (`error` says why).
    @discardableResult
    public func open(method: String, url: String, async isAsync: Bool = true, user: String? = nil,
                     password: String? = nil) -> Bool {
        abort()
        let parsed: ClientURL
        do throws(ClientURLError) {
            parsed = try ClientURL(parsing: url)
        } catch {
            state.withLock { $0.error = RelayHTTPError(.invalidRequest, "bad URL: \(error)") }
            return false
        }
        guard !method.isEmpty, method.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            state.withLock { $0.error = RelayHTTPError(.invalidRequest, "bad method") }
            return false
        }
        let callback = state.withLock { state in
            state = State(generation: state.generation + 1, onReadyStateChange: state.onReadyStateChange)
            state.readyState = .OPENED
            state.method = method.uppercased()
            state.url = parsed
            state.isAsync = isAsync
            state.credentials = user.map { ClientCredentials(user: $0, password: password) }
            return state.onReadyStateChange
        }
        notify(callback)
        return true
    }

    /// Adds a request header; only while `OPENED`.
    @discardableResult
    public func setRequestHeader(_ name: String, _ value: String) -> Bool {
        state.withLock { state in
            guard state.readyState == .OPENED, state.task == nil else { return false }
            state.headers.append(name: name, value: value)
            return true
        }
    }

    /// Sends the request with no body.
    @discardableResult
    public func send() -> Bool { start(.empty) }

    /// Sends the request with `body`.
    @discardableResult
    public func send(_ body: [UInt8]) -> Bool { start(.bytes(body)) }

    /// Sends the request with `text` in UTF-8.
    @discardableResult
    public func send(_ text: String) -> Bool { start(.bytes(Array(text.utf8))) }

    /// Stops a request under way: it ends `DONE` with an `aborted` error, then is `UNSENT`.
    public func abort() {
        let (task, callback) = state.withLock { state -> (Task<Void, Never>?, (@Sendable (RelayHTTPRequest) -> Void)?) in
            guard let task = state.task else { return (nil, nil) }
            state.generation += 1
            state.task = nil
            state.readyState = .DONE
            state.status = 0
            state.error = RelayHTTPError(.aborted, "the request was aborted")
            return (task, state.onReadyStateChange)
        }
        guard let task else { return }
        task.cancel()
        notify(callback)
        state.withLock { if $0.task == nil, $0.readyState == .DONE { $0.readyState = .UNSENT } }
    }

    /// Formats the response fields as XHR does: `name: value` lines joined by CRLF.
    public func getAllResponseHeaders() -> String? {
        state.withLock { state in
            state.responseHeaders.map { $0.map { "\($0.name): \($0.value)\r\n" }.joined() }
        }
    }

    /// The values of `name` joined by `, `, or nil when absent or before `HEADERS_RECEIVED`.
    public func getResponseHeader(_ name: String) -> String? {
        state.withLock { state in
            guard let values = state.responseHeaders?.values(name), !values.isEmpty else { return nil }
            return values.joined(separator: ", ")
        }
    }

    private func start(_ body: RelayHTTPBody) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let started: (Bool, (@Sendable (RelayHTTPRequest) -> Void)?) = state.withLock { state in
            guard state.readyState == .OPENED, state.task == nil, let url = state.url else { return (false, nil) }
            let request = RelayHTTPClientRequest(method: state.method, url: url, headers: state.headers,
                                                 body: body, serverCredentials: state.credentials)
            let generation = state.generation
            let isAsync = state.isAsync
            state.readyState = .SENT
            state.task = Task { [self] in
                await run(request, generation: generation)
                if !isAsync { done.signal() }
            }
            return (true, state.onReadyStateChange)
        }
        guard started.0 else { return false }
        notify(started.1)
        if !state.withLock({ $0.isAsync }) { done.wait() }
        return true
    }

    private func run(_ request: RelayHTTPClientRequest, generation: Int) async {
        do throws(RelayHTTPError) {
            let response = try await client.execute(request)
            guard update(generation, { state in
                state.readyState = .HEADERS_RECEIVED
                state.status = response.status
                state.statusText = response.reason
                state.responseHeaders = response.headers
            }) else { await response.body.cancel(); return }
            var count = 0
            while let chunk = try await response.body.source.next() {
                count += chunk.count
                guard count <= maxResponseBytes else {
                    await response.body.cancel()
                    throw RelayHTTPError(.invalidRequest, "the response body is larger than \(maxResponseBytes) bytes")
                }
                let first = count == chunk.count
                guard update(generation, notifying: first, { state in
                    state.readyState = .LOADING
                    state.body += chunk
                }) else { await response.body.cancel(); return }
            }
            _ = update(generation) { state in
                state.readyState = .DONE
                state.task = nil
            }
        } catch {
            _ = update(generation) { state in
                state.readyState = .DONE
                state.status = 0
                state.error = error
                state.task = nil
            }
        }
    }

    /// Applies a change made by the request of `generation` unless it was aborted or
    /// reopened since; returns whether it was applied.
    private func update(_ generation: Int, notifying: Bool = true, _ change: (inout State) -> Void) -> Bool {
        let (current, callback) = state.withLock { state -> (Bool, (@Sendable (RelayHTTPRequest) -> Void)?) in
            guard state.generation == generation else { return (false, nil) }
            change(&state)
            return (true, state.onReadyStateChange)
        }
        if current, notifying { notify(callback) }
        return current
    }

    private func notify(_ callback: (@Sendable (RelayHTTPRequest) -> Void)?) {
        guard let callback else { return }
        callbackQueue.async { callback(self) }
    }
}
