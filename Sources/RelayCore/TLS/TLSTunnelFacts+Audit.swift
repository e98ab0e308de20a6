extension AuditEntry {
    /// Fills the TLS columns from what a tunnel's inspection read: the version and cipher its
    /// ServerHello chose, the server name its ClientHello carried and whether that was the
    /// outer name of an Encrypted Client Hello. A tunnel whose payload was not TLS leaves them
    /// empty.
    public mutating func recordTLS(_ facts: TLSTunnelFacts) {
        guard facts.payload == .tls else { return }
        tlsVersion = facts.auditVersion
        tlsCipher = facts.auditCipher
        tlsSNI = facts.sni
        tlsECH = facts.ech
    }
}
