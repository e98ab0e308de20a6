import Foundation
import RelayCore
import RelayIO

/// The TLS contexts one configuration needs, built when it is loaded or reloaded and never
/// per connection (OpenSSL 3 is slow to build a context and contends on locks while it does):
/// one server context per HTTPS listener, one client context per distinct upstream TLS
/// policy. A reload builds a new set, carrying each listener's session ticket keys over so
/// clients resume across it; any file that cannot be read refuses the whole reload.
struct TLSContexts: Sendable {
    /// What decides a client context: rules with the same trust, checking and versions share one.
    private struct UpstreamKey: Hashable {
        var caFile: String?
        var verify: Bool
        var versions: TLSVersionSet
    }

    /// A certificate that expires within this many days is warned about at load.
    static let expiryWarningDays: Int64 = 14

    /// The HTTPS listeners' contexts, in `RelayConfig.tlsListeners` order.
    let listeners: [TLSContext]
    /// Each listener context's line, in `listeners` order: what an accepting socket looks
    /// its context up by, so a socket kept across a reload uses the context just built.
    let listenerKeys: [TLSListenerKey]
    /// What each listener trusts for client certificates, in `listeners` order.
    private let listenerTrusts: [TLSClientTrust]
    private let upstreamByRule: [String: TLSContext]
    /// For a request whose rule is not in the table (it cannot happen for an allowed rule;
    /// kept so that the relay's TLS always has verified defaults to fall back on).
    private let defaultUpstream: TLSContext
    /// Lines for the log at load: certificates about to expire, checks turned off.
    let warnings: [String]

    /// Builds every context `config` asks for; `previous` passes listener ticket keys on.
    static func build(_ config: RelayConfig, previous: TLSContexts?, now: Int64 = Int64(Date().timeIntervalSince1970))
        throws(TLSSetupError) -> TLSContexts {
        var warnings: [String] = []
        var listeners: [TLSContext] = []
        var trusts: [TLSClientTrust] = []
        let keys = TLSListenerKey.keys(config.tlsListeners)
        for (index, listener) in config.tlsListeners.enumerated() {
            let tls = listener.tls
            // Ticket keys pass only to the same listener, and only if what it trusts for client
            // certificates is unchanged (`TLSClientTrust`).
            var trust = TLSClientTrust(tls)
            let key = keys[index]
            var inherited: TLSContext?
            if let previous, let old = previous.listenerTrust(key), trust.acceptsTickets(from: old) {
                inherited = previous.listener(key)
            }
            func build(_ inheriting: TLSContext?) throws(TLSSetupError) -> TLSContext {
                try TLSContext.server(certificateFile: tls.certificateFile, keyFile: tls.keyFile,
                                      clientCAFile: tls.clientCAFile, requireClientCertificate: tls.requireClientCertificate,
                                      versions: TLSProtocols(tls.versions), inheritingTicketKeysFrom: inheriting)
            }
            var context = try build(inherited)
            if TLSClientTrust(tls) != trust {
                // The CA file changed while the context read it: what it trusts is not known.
                trust = trust.unknown
                if inherited != nil { context = try build(nil) }
            }
            listeners.append(context)
            trusts.append(trust)
            let expiry = try TLSCertificateFile.expiry(path: tls.certificateFile)
            let days = expiry.daysUntilExpiry(now: now)
            if days < expiryWarningDays {
                warnings.append(days < 0
                    ? "listen \(listener.address): certificate \(tls.certificateFile) has expired"
                    : "listen \(listener.address): certificate \(tls.certificateFile) expires in \(days) days")
            }
        }
        var byKey: [UpstreamKey: TLSContext] = [:]
        var byRule: [String: TLSContext] = [:]
        for rule in config.rules where rule.kind == .server {
            let key = UpstreamKey(caFile: rule.upstreamTLS.caFile, verify: rule.upstreamTLS.verify,
                                  versions: rule.tunnelTLS.versions)
            if byKey[key] == nil {
                byKey[key] = try TLSContext.client(caFile: key.caFile, verify: key.verify, versions: TLSProtocols(key.versions))
            }
            byRule[rule.rule] = byKey[key]
        }
        let defaultKey = UpstreamKey(caFile: nil, verify: true, versions: config.tlsVersions)
        let defaultUpstream: TLSContext
        if let shared = byKey[defaultKey] {
            defaultUpstream = shared
        } else {
            defaultUpstream = try TLSContext.client(caFile: nil, verify: true, versions: TLSProtocols(config.tlsVersions))
        }
        return TLSContexts(listeners: listeners, listenerKeys: keys,
                           listenerTrusts: trusts, upstreamByRule: byRule, defaultUpstream: defaultUpstream,
                           warnings: warnings)
    }

    /// The server context of the `listen … tls` line `key` names; nil when this
    /// configuration has no such line.
    func listener(_ key: TLSListenerKey) -> TLSContext? {
        listenerKeys.firstIndex(of: key).map { listeners[$0] }
    }

    /// What the `listen … tls` line `key` names trusts for client certificates.
    private func listenerTrust(_ key: TLSListenerKey) -> TLSClientTrust? {
        listenerKeys.firstIndex(of: key).map { listenerTrusts[$0] }
    }

    /// The client context for the relay's own TLS to a server allowed by `rule`.
    func upstream(forRule rule: String) -> TLSContext {
        upstreamByRule[rule] ?? defaultUpstream
    }
}

/// `check-config`'s view of a configuration's TLS: every context built as `serve` would
/// build it (so an unreadable certificate or a key that does not match fails the dry run
/// too), and the warnings the load would log.
public enum TLSConfigCheck {
    /// The warnings; throws what `serve` would refuse to start with.
    public static func check(_ config: RelayConfig) throws -> [String] {
        try TLSContexts.build(config, previous: nil).warnings
    }
}
