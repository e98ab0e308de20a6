import RelayCore

extension RuntimeSettings {
    /// The inspector for a tunnel (or static forward) to `host` allowed by `rule`: that rule's
    /// TLS policy, or the defaults (versions from `tls-versions`, SNI must match) should the
    /// rule be gone. nil when the tunnel names no host to judge a server name against.
    func tunnelInspector(rule: String, host: Host?) -> TLSTunnelInspector? {
        guard let host else { return nil }
        let policy = session.registry.rule(named: rule)?.tunnelTLS ?? TunnelTLSPolicy()
        return TLSTunnelInspector(policy: policy, connectHost: host, settings: tlsInspection)
    }
}
