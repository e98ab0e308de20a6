/// Where Kerberos remembers authenticators it has already accepted, so a captured
/// `Proxy-Authorization: Negotiate` token cannot be replayed on another connection.
///
/// MIT krb5 (≥ 1.18, the `file2` format) keeps one file of authenticator hashes and
/// writes to it on every acceptance. Its default location is `$KRB5RCACHEDIR` or
/// `/var/tmp`, which a hardened systemd unit (`PrivateTmp=`, `ProtectSystem=strict`,
/// a dynamic user) may not be able to write or may give a fresh copy per start; pointing
/// it into the relay's state directory keeps it writable and persistent without changing
/// process-wide environment variables.
public enum GSSReplayCache: Sendable, Equatable {
    /// krb5's own default (`dfl:`): `krb5_<euid>.rcache2` under `$KRB5RCACHEDIR` or `/var/tmp`.
    case libraryDefault
    /// A `file2` replay cache at this absolute path (created if missing).
    case file(path: String)

    /// The value of the credential store's `rcache` element, or nil for the default.
    var credentialStoreValue: String? {
        switch self {
        case .libraryDefault: nil
        case .file(let path): "file2:" + path
        }
    }
}
