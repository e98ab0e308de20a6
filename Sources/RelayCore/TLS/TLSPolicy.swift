/// What a `server` rule lets a tunnel's end-to-end TLS do, read from its cleartext handshake.
public struct TunnelTLSPolicy: Sendable, Equatable {
    /// How the ClientHello's server name must relate to the host the tunnel was opened to.
    public enum SNIRule: String, Sendable, Equatable, CaseIterable {
        /// Present and equal to the CONNECT host (the default): a CONNECT to an address
        /// cannot carry a name the rules never saw.
        case match
        /// Equal when present; a hello without one passes.
        case optional
        /// Not checked.
        case any
    }

    /// Whether the tunnel must carry TLS.
    public enum Requirement: String, Sendable, Equatable, CaseIterable {
        /// TLS is inspected when the client opens with a handshake; anything else passes.
        case any
        /// The client must open with a TLS handshake (`tls-required` otherwise).
        case required
    }

    /// The versions a ClientHello may offer and a ServerHello may choose.
    public var versions: TLSVersionSet
    public var sni: SNIRule
    public var requirement: Requirement

    public init(versions: TLSVersionSet = .default, sni: SNIRule = .match, requirement: Requirement = .any) {
        self.versions = versions
        self.sni = sni
        self.requirement = requirement
    }
}

/// What happens to a tunnel whose handshake could not be judged in time or in the
/// inspection buffer.
public enum TLSInspectionAction: String, Sendable, Equatable, CaseIterable {
    /// End it (`tls-inspection-timeout` / `tls-inspection-overflow`): the default, since a
    /// handshake that cannot be read cannot be shown to keep the policy.
    case refuse
    /// Stop inspecting and relay it as it is, audited with what was seen.
    case pass
}

/// The deployment-wide settings of tunnel inspection.
public struct TLSInspectionSettings: Sendable, Equatable {
    /// Most handshake bytes held per direction while a decision is pending.
    public static let bufferLimit = 64 * 1024

    /// From the tunnel's first handshake byte to its decision.
    public var timeout: Duration
    public var onTimeout: TLSInspectionAction
    public var onOverflow: TLSInspectionAction

    public init(timeout: Duration = .seconds(10), onTimeout: TLSInspectionAction = .refuse,
                onOverflow: TLSInspectionAction = .refuse) {
        self.timeout = timeout
        self.onTimeout = onTimeout
        self.onOverflow = onOverflow
    }
}

/// How the relay speaks TLS to an app server itself (`https://` requests, `server … tls`).
public struct UpstreamTLSPolicy: Sendable, Equatable {
    /// `tls` on the rule: plain `http://` requests to it go over TLS too.
    public var always: Bool
    /// `ca=FILE`: the trust anchors for this server instead of the system store.
    public var caFile: String?
    /// `verify=off`: no certificate or host-name check (logged as a warning at load).
    public var verify: Bool

    public init(always: Bool = false, caFile: String? = nil, verify: Bool = true) {
        self.always = always
        self.caFile = caFile
        self.verify = verify
    }
}

/// An HTTPS proxy listener's TLS: `listen ADDR:PORT tls cert=FILE key=FILE …`.
public struct ListenerTLSConfig: Sendable, Equatable {
    public var certificateFile: String
    public var keyFile: String
    /// `client-ca=FILE`: client certificates are asked for and checked against it.
    public var clientCAFile: String?
    /// `require-client-cert`: a handshake without a trusted client certificate fails.
    public var requireClientCertificate: Bool
    /// `tls-versions=` on the listener, else the global `tls-versions`.
    public var versions: TLSVersionSet

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil,
                requireClientCertificate: Bool = false, versions: TLSVersionSet = .default) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.requireClientCertificate = requireClientCertificate
        self.versions = versions
    }
}
