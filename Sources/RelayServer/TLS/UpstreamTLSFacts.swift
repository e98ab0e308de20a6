import RelayCore
import RelayIO

/// What the relay's own TLS handshake with an app server settled, for the rows of the
/// exchanges carried on that connection: `tls_version`, `tls_cipher`, `tls_sni`.
struct UpstreamTLSFacts: Equatable {
    /// The `resolved` column of the exchanges on this connection (`a.b.c.d:port`): a row
    /// about another destination (a refusal, the relay's own answer) gets none of these.
    var resolved: String
    /// `TLSv1.0` … `TLSv1.3`, spelled as the tunnel rows spell the version their ServerHello
    /// showed.
    var version: String?
    /// OpenSSL's name of the cipher suite.
    var cipher: String?
    /// The server name the relay sent; nil when it connected to an address (no SNI then).
    var serverName: String?

    init(resolved: String, connection: TLSConnection, serverName: String?) {
        self.resolved = resolved
        version = connection.auditVersion
        cipher = connection.cipherName
        self.serverName = serverName
    }

    /// Fills the TLS columns of `entry` when it is a row of an exchange on this connection.
    func annotate(_ entry: inout AuditEntry) {
        guard entry.event == .requestOpen || entry.event == .requestClose, entry.resolved == resolved else { return }
        entry.tlsVersion = version
        entry.tlsCipher = cipher
        entry.tlsSNI = serverName
    }
}
