#if canImport(Glibc)
import Foundation

/// What `rate --auth SCHEME` needs before any thread starts: the scheme, the credentials,
/// and everything that does not change per tunnel (the Basic header, the NT hash, the
/// fetched digests). Immutable, shared by the client threads.
struct ProxyAuthSettings: Sendable {
    enum Scheme: String, Sendable {
        case basic, digest, ntlm, negotiate
    }

    let scheme: Scheme
    let user: String
    let password: String
    /// Digest only: keep the last nonce per thread and count up `nc`, as browsers do,
    /// instead of a fresh 407 round trip per tunnel.
    let reuseNonce: Bool
    let hashes: Hashes
    let basicAuthorization: String
    let ntHash: [UInt8]

    /// nil for `--auth none` (or no `--auth`): the unauthenticated path stays untouched.
    init?(_ options: Options) throws {
        let name = try options.string("auth", default: "none")
        if name == "none" { return nil }
        guard let scheme = Scheme(rawValue: name) else {
            throw UsageError(message: "--auth must be none, basic, digest, ntlm or negotiate, not \(name)")
        }
        self.scheme = scheme
        user = try options.string("user", default: scheme == .negotiate ? "" : nil)
        password = try options.string("password", default: scheme == .negotiate ? "" : nil)
        reuseNonce = options.flag("digest-reuse-nonce")
        if reuseNonce && scheme != .digest {
            throw UsageError(message: "--digest-reuse-nonce applies to --auth digest only")
        }
        hashes = try Hashes()
        basicAuthorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        ntHash = scheme == .ntlm ? try Hashes.md4(NTLMResponder.utf16le(password)) : []
    }

    /// How the handshake ran, for the result line.
    var mode: String {
        switch scheme {
        case .basic: "preemptive"
        case .digest: reuseNonce ? "reuse-nonce" : "challenge-per-tunnel"
        case .ntlm: "type1-type2-type3"
        case .negotiate: "spnego-per-tunnel"
        }
    }
}

/// Opens authenticated tunnels for one client thread (owned by that thread alone): a fresh
/// TCP connection per tunnel, and the scheme's full handshake on it.
final class ProxyAuthClient {
    private let settings: ProxyAuthSettings
    private let dial: Endpoint
    private let authority: String
    private var digest: DigestResponder
    private var ntlm: NTLMResponder
    private let negotiate: NegotiateInitiator?
    private var cachedChallenge: DigestChallenge?
    private var nonceCount = 0
    /// CONNECT requests sent, including the ones answered 407.
    private(set) var requests = 0
    /// Times a 407 came with `close` and the answer needed a new connection.
    private(set) var reconnects = 0

    init(_ settings: ProxyAuthSettings, route: Route) throws {
        guard let target = route.connectTarget else {
            throw UsageError(message: "--auth needs --mode connect")
        }
        self.settings = settings
        dial = route.dial
        authority = target.description
        digest = DigestResponder(user: settings.user, password: settings.password, hashes: settings.hashes)
        ntlm = NTLMResponder(user: settings.user, ntHash: settings.ntHash, hashes: settings.hashes)
        negotiate = settings.scheme == .negotiate ? try NegotiateInitiator(host: route.dial.host) : nil
    }

    /// Connects and authenticates; returns the descriptor once the proxy answered 2xx.
    func openTunnel() throws -> Int32 {
        var fd = try Socket.connect(to: dial)
        do {
            switch settings.scheme {
            case .basic:
                try expectSuccess(send(fd, authorization: settings.basicAuthorization))
            case .negotiate:
                let token = try negotiate!.token()
                try expectSuccess(send(fd, authorization: "Negotiate " + Data(token).base64EncodedString()))
            case .ntlm:
                let challenge = try send(fd, authorization: "NTLM " + Data(NTLMResponder.negotiateMessage).base64EncodedString())
                guard challenge.status == 407, challenge.reusable else {
                    throw ProxyAuthError(description: "NTLM: expected a keep-alive 407 with a CHALLENGE, got \(challenge.statusLine)")
                }
                guard let value = challenge.values("proxy-authenticate").first(where: { $0.hasPrefix("NTLM ") }),
                      let type2 = Data(base64Encoded: String(value.dropFirst(5))) else {
                    throw ProxyAuthError(description: "NTLM: 407 without a 'Proxy-Authenticate: NTLM <challenge>'")
                }
                let type3 = try ntlm.authenticate(Array(type2))
                try expectSuccess(send(fd, authorization: "NTLM " + Data(type3).base64EncodedString()))
            case .digest:
                if settings.reuseNonce, let cached = cachedChallenge {
                    nonceCount += 1
                    let answer = try digest.withRequest(for: cached, uri: authority, nonceCount: nonceCount) { request in
                        try send(fd, request: request)
                    } ?? send(fd, authorization: digest.authorization(for: cached, uri: authority, nonceCount: nonceCount))
                    if (200..<300).contains(answer.status) { return fd }
                    // Stale or expired nonce: answer the fresh challenge, like a browser.
                    try answerDigestChallenge(answer, on: &fd)
                } else {
                    let answer = try send(fd, authorization: nil)
                    try answerDigestChallenge(answer, on: &fd)
                }
            }
            return fd
        } catch {
            if fd >= 0 { close(fd) }
            throw error
        }
    }

    /// Answers a 407 Digest challenge with nc=00000001, on the same connection when the
    /// proxy kept it open, else on a new one (`fd` then names it; -1 if that connect failed).
    private func answerDigestChallenge(_ answer: ProxyResponse, on fd: inout Int32) throws {
        guard answer.status == 407 else {
            throw ProxyAuthError(description: "Digest: expected 407, got \(answer.statusLine)")
        }
        guard let challenge = DigestChallenge.first(in: answer.values("proxy-authenticate")) else {
            throw ProxyAuthError(description: "Digest: no usable challenge in \(answer.values("proxy-authenticate"))")
        }
        if !answer.reusable {
            close(fd)
            fd = -1
            fd = try Socket.connect(to: dial)
            reconnects += 1
        }
        nonceCount = 1
        cachedChallenge = challenge
        try expectSuccess(send(fd, authorization: digest.authorization(for: challenge, uri: authority, nonceCount: 1)))
    }

    private func send(_ fd: Int32, authorization: String?) throws -> ProxyResponse {
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        return try Array(request.utf8).withUnsafeBytes { try send(fd, request: $0) }
    }

    /// Sends a whole request head and reads the answer's.
    private func send(_ fd: Int32, request: UnsafeRawBufferPointer) throws -> ProxyResponse {
        requests += 1
        try Socket.writeAll(fd, request)
        return try ProxyResponse.read(from: fd)
    }

    private func expectSuccess(_ answer: ProxyResponse) throws {
        guard (200..<300).contains(answer.status) else {
            throw ProxyAuthError(description: "CONNECT refused: \(answer.statusLine)")
        }
    }
}
#endif
