extension ProxySession {
    /// Everything a session needs that comes from configuration.
    public struct Settings: Sendable {
        public var registry: Registry
        public var headLimits: HTTPHeadLimits
        /// The pseudonym in `Via: 1.1 <viaName>`.
        public var viaName: String
        /// Whether every request must be tied to an authenticated principal before any
        /// destination is decided or contacted.
        public var requiresAuth: Bool
        /// The version of what proofs are checked against (the user store's generation),
        /// read as a request is authenticated and again before a proof this connection
        /// remembers is trusted: one made under another version is made again, so a deleted
        /// user or a changed password does not live on in kept-alive connections.
        public var credentialsVersion: (@Sendable () -> UInt64)?
        /// Open tunnels per principal (nil: no limit). A CONNECT with a principal takes a
        /// place before its upstream is contacted; the driver takes it over
        /// (`takeTunnelQuotaPlace`) and gives it back when the connection or tunnel ends.
        public var tunnelQuota: TunnelQuota?
        /// The relay's own host: its listening endpoints are never a destination and its
        /// interface addresses are guarded like loopback (nil: not known, as in tests that
        /// do not need it).
        public var localHost: LocalHost?
        /// What an authentication refusal records instead of a claimed name that is not an
        /// account (`ProxyAuthRefusal.claimedIsAccount`), which may be a password typed into
        /// the user-name field (nil: the name itself).
        public var unknownNamePseudonym: (@Sendable (String) -> String)?
        /// What the status endpoint reports about this relay.
        public var relayFacts = RelayFacts()

        /// Settings for one session; everything but the registry has the default a plain
        /// unauthenticated relay uses.
        public init(registry: Registry, headLimits: HTTPHeadLimits = HTTPHeadLimits(), viaName: String = "dynrelay",
                    requiresAuth: Bool = false, credentialsVersion: (@Sendable () -> UInt64)? = nil,
                    tunnelQuota: TunnelQuota? = nil, localHost: LocalHost? = nil) {
            self.registry = registry
            self.headLimits = headLimits
            self.viaName = viaName
            self.requiresAuth = requiresAuth
            self.credentialsVersion = credentialsVersion
            self.tunnelQuota = tunnelQuota
            self.localHost = localHost
        }
    }
}
