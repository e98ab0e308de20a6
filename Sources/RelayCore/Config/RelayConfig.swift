/// A parsed and checked configuration: everything `serve` needs, nothing it must re-check.
public struct RelayConfig: Sendable {
    /// Default `state-dir`.
    public static let defaultStateDir = "/var/lib/dynrelay"

    /// HTTP proxy listeners, in config order.
    public var listeners: [ListenAddress]
    /// HTTPS proxy listeners (`listen … tls`), in config order; no address is in both lists.
    public var tlsListeners: [TLSListener]
    /// Where `audit.db` lives.
    public var stateDir: String
    /// Event loop count; nil means one per core.
    public var loops: Int?
    /// The registry built from `rules`.
    public var registry: Registry
    /// `server` and `deny` rules in config order (includes expanded in place).
    public var rules: [DestinationRule]
    /// Static TCP forwards, each already checked against the registry.
    public var forwards: [ForwardDirective]
    /// Resource bounds.
    public var limits: RelayLimits
    /// Deadlines.
    public var timeouts: RelayTimeouts
    /// Audit durability.
    public var auditSync: AuditSync
    /// Proxy authentication.
    public var auth: AuthConfig
    /// Every file read, main file first, then includes in the order they were parsed.
    public var sourceFiles: [String]
    /// `tls-versions` and the `GDEnable` toggles: what listeners and rules without their own
    /// `tls-versions=` allow (already copied into them).
    public var tlsVersions: TLSVersionSet
    /// How tunnels' cleartext handshakes are inspected.
    public var tlsInspection: TLSInspectionSettings
    /// What the configuration allows but ops should hear about at every load, in file order.
    public var warnings: [ConfigWarning]
    /// `instance NAME`: which relay this is, on its status endpoint; nil means the host name.
    public var instance: String?

    /// Creates a configuration; `registry` is built from `rules`.
    public init(listeners: [ListenAddress], stateDir: String = RelayConfig.defaultStateDir,
                loops: Int? = nil, rules: [DestinationRule] = [], forwards: [ForwardDirective] = [],
                limits: RelayLimits = RelayLimits(), timeouts: RelayTimeouts = RelayTimeouts(),
                auditSync: AuditSync = .normal, auth: AuthConfig = AuthConfig(), sourceFiles: [String] = [],
                tlsListeners: [TLSListener] = [], tlsVersions: TLSVersionSet = .default,
                tlsInspection: TLSInspectionSettings = TLSInspectionSettings(), warnings: [ConfigWarning] = []) {
        self.listeners = listeners
        self.tlsListeners = tlsListeners
        self.tlsVersions = tlsVersions
        self.tlsInspection = tlsInspection
        self.warnings = warnings
        self.stateDir = stateDir
        self.loops = loops
        self.registry = Registry(rules: rules)
        self.rules = rules
        self.forwards = forwards
        self.limits = limits
        self.timeouts = timeouts
        self.auditSync = auditSync
        self.auth = auth
        self.sourceFiles = sourceFiles
    }
}
