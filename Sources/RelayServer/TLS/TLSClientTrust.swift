import Foundation
import RelayCore

/// What an HTTPS listener trusts for client certificates, as a reload compares it to decide
/// whether the listener's session ticket keys carry over. A ticket brings back the client
/// certificate verified when its session began, so the keys may pass on only when the trust is
/// the same: the CA file's contents, not its path (a file rewritten in place is another CA),
/// and the same `require-client-cert`.
struct TLSClientTrust: Sendable, Equatable {
    /// SHA-256 of the `client-ca=` file's bytes; nil without one.
    private let caDigest: [UInt8]?
    private let requireClientCertificate: Bool
    /// False when the CA file could not be read, or changed while its context loaded it:
    /// which certificates the context trusts is then not known, and no ticket passes.
    private var known: Bool

    /// Reads `tls`'s CA file now.
    init(_ tls: ListenerTLSConfig) {
        requireClientCertificate = tls.requireClientCertificate
        guard let file = tls.clientCAFile else {
            caDigest = nil
            known = true
            return
        }
        caDigest = FileManager.default.contents(atPath: file).map { AuthCrypto.sha256(Array($0)) }
        known = caDigest != nil
    }

    /// The same trust marked unknown: its CA file changed while the context was being built.
    var unknown: TLSClientTrust {
        var trust = self
        trust.known = false
        return trust
    }

    /// True when tickets issued under `previous` may resume under this trust.
    func acceptsTickets(from previous: TLSClientTrust) -> Bool {
        known && previous.known && self == previous
    }
}
