import RelayCore
import RelayIO

extension TLSProtocols {
    /// The versions of a configured set, for `TLSContext.server(…)` and `.client(…)`
    /// (RelayIO does not see RelayCore's `TLSVersionSet`).
    public init(_ versions: TLSVersionSet) {
        self.init(wire: versions.versions.map(\.wire))
    }
}

extension TLSConnection {
    /// The negotiated version as the audit trail spells it (`TLSv1.0` … `TLSv1.3`, as the
    /// tunnel rows spell what their ServerHello chose), for every column the relay's own TLS
    /// fills: `tls_version` upstream, `client_tls_version` on the HTTPS listener.
    var auditVersion: String? {
        protocolWireVersion.flatMap(TLSVersion.init(wire:))?.auditName ?? protocolVersion
    }
}
