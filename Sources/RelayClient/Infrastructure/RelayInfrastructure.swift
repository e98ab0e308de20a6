import Foundation
import RelayCore

/// What a relay says of itself at `/.well-known/dynrelay/status`.
public struct RelayStatus: Sendable, Equatable {
    /// The relay asked.
    public let relay: RelayEndpoint
    /// `ok`, or `draining` while the relay finishes its tunnels before it stops.
    public let status: String
    /// The relay's version.
    public let version: String
    /// The relay's instance name (`instance` in its configuration, else its host name).
    public let instance: String

    /// Whether the relay takes new tunnels.
    public var isServing: Bool { status == "ok" }
}

/// The relay's own endpoints, asked of one relay directly (origin form, not proxied), so a
/// client can verify its connection to the proxy infrastructure before it opens a socket,
/// and read the application configuration: the servers its principal may reach. A proxy
/// without them (squid) answers something else, reported as `not-offered`.
public struct RelayInfrastructure: Sendable {
    /// Trust for `https://` relays.
    public var relayTLS: ClientTLSOptions
    /// Connect, handshake and read timeouts.
    public var transport: ClientTransportOptions
    /// The loops the exchanges run on.
    public var runtime: RelayClientRuntime
    /// Proxy-authentication rounds before the relay's `407`s count as a refusal.
    public var maxAuthRounds: Int

    /// The largest answer read: both documents are small.
    static let maxAnswerBytes = 1 << 20

    /// Creates a client for the relays' own endpoints.
    public init(relayTLS: ClientTLSOptions = ClientTLSOptions(), transport: ClientTransportOptions = ClientTransportOptions(),
                runtime: RelayClientRuntime = .shared, maxAuthRounds: Int = 6) {
        self.relayTLS = relayTLS
        self.transport = transport
        self.runtime = runtime
        self.maxAuthRounds = maxAuthRounds
    }

    /// `relay`'s status. A draining relay answers `503` with its status, returned here with
    /// `isServing` false.
    public func status(of relay: RelayEndpoint) async throws(RelayClientError) -> RelayStatus {
        let answer = try await exchange(relay, target: "/.well-known/dynrelay/status", credentials: nil)
        guard answer.head.status == 200 || answer.head.status == 503,
              let object = Self.jsonObject(answer.body),
              let status = object["status"] as? String, let version = object["version"] as? String,
              let instance = object["instance"] as? String
        else { throw Self.notOffered(relay, "status", answer.head.status) }
        return RelayStatus(relay: relay, status: status, version: version, instance: instance)
    }

    /// The application configuration `relay` gives the principal of `credentials` (nil: no
    /// proxy authentication), as the JSON document the relay sent.
    public func applicationConfig(from relay: RelayEndpoint,
                                  credentials: ClientCredentials?) async throws(RelayClientError) -> [UInt8] {
        let answer = try await exchange(relay, target: "/.well-known/dynrelay/config", credentials: credentials)
        guard answer.head.status == 200, let object = Self.jsonObject(answer.body), object["servers"] is [Any] else {
            throw Self.notOffered(relay, "config", answer.head.status)
        }
        return answer.body
    }

    private static func jsonObject(_ body: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    private static func notOffered(_ relay: RelayEndpoint, _ endpoint: String, _ status: Int) -> RelayClientError {
        RelayClientError(.notOffered, "\(relay.url.authority) does not offer the dynrelay \(endpoint) endpoint (it answered \(status))",
                         httpStatus: status)
    }

    /// One request to `target` on `relay`, answering `407`s with `credentials` on the same
    /// connection while the relay keeps it open (NTLM needs that), on a new one otherwise.
    private func exchange(_ relay: RelayEndpoint, target: String,
                          credentials: ClientCredentials?) async throws(RelayClientError) -> RelayAnswer {
        var stream = try await connect(relay)
        defer { stream.close() }
        var session = credentials.map { ClientAuthSession(credentials: $0, host: relay.url.cookieHost, peer: .proxy) }
        var authorization: String?
        for _ in 0..<maxAuthRounds {
            var request = "GET \(target) HTTP/1.1\r\nHost: \(relay.url.authority)\r\nAccept: application/json\r\n"
            if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
            try await stream.write(Array((request + "\r\n").utf8))
            var reader = RelayAnswerReader(limit: Self.maxAnswerBytes)
            let answer = try await reader.read(from: stream, relay: relay)
            guard answer.head.status == 407 else {
                do throws(ClientAuthError) {
                    if authorization != nil {
                        try session?.accepted(headerValues: answer.head.headers.values("Proxy-Authenticate"))
                    }
                } catch {
                    throw RelayClientError(.mutualAuthFailed, "\(relay.url.authority) did not prove its identity: \(error)",
                                           httpStatus: answer.head.status)
                }
                return answer
            }
            guard var current = session else {
                throw RelayClientError(.proxyAuthFailed, "\(relay.url.authority) asks for proxy authentication and no credentials were given",
                                       httpStatus: 407, reasonCode: answer.reasonCode)
            }
            do throws(ClientAuthError) {
                authorization = try current.answer(headerValues: answer.head.headers.values("Proxy-Authenticate"),
                                                   method: "GET", target: target)
            } catch {
                throw RelayClientError(.proxyAuthFailed, "\(relay.url.authority) refused proxy authentication: \(error)",
                                       httpStatus: 407, reasonCode: answer.reasonCode)
            }
            session = current
            guard authorization != nil else {
                throw RelayClientError(.proxyAuthFailed, "\(relay.url.authority) answered 407 with no challenge",
                                       httpStatus: 407, reasonCode: answer.reasonCode)
            }
            if answer.closes {
                stream.close()
                stream = try await connect(relay)
            }
        }
        throw RelayClientError(.proxyAuthFailed, "\(relay.url.authority) still asks for proxy authentication after \(maxAuthRounds) rounds",
                               httpStatus: 407)
    }

    /// The relay's connection; a relay that cannot be reached or does not answer in time
    /// says so in its code, a TLS failure keeps its own (an untrusted relay is worth naming).
    private func connect(_ relay: RelayEndpoint) async throws(RelayClientError) -> any ClientByteStream {
        do throws(RelayClientError) {
            return try await RelayConnector(relayTLS: relayTLS, transport: transport, runtime: runtime).connect(to: relay)
        } catch where error.code == .connectionRefused || error.code == .unreachable || error.code == .hostNotFound {
            throw RelayClientError(.relayUnreachable, "\(relay.url.authority): \(error.message)", errno: error.errno)
        } catch where error.code == .timeout {
            throw RelayClientError(.relayTimeout, "\(relay.url.authority): \(error.message)")
        }
    }
}
