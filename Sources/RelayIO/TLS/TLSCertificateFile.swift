import COpenSSL
import Glibc

/// When the first certificate of a PEM file expires, for the start-up and `check-config`
/// warning about certificates that expire soon.
public struct TLSCertificateFile: Sendable, Equatable {
    /// The file read.
    public let path: String
    /// The certificate's notAfter, in seconds since the Unix epoch (UTC).
    public let notAfter: Int64

    /// Reads the first certificate of the PEM file at `path`.
    public static func expiry(path: String) throws(TLSSetupError) -> TLSCertificateFile {
        ERR_clear_error()
        guard let file = BIO_new_file(path, "r") else {
            throw TLSSetupError(.certificate, "cannot read certificate", file: path)
        }
        defer { BIO_free(file) }
        guard let certificate = PEM_read_bio_X509(file, nil, nil, nil) else {
            throw TLSSetupError(.certificate, "no PEM certificate in", file: path)
        }
        defer { X509_free(certificate) }
        var time = tm()
        guard let notAfter = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(notAfter, &time) == 1 else {
            throw TLSSetupError(.certificate, "unreadable notAfter in certificate", file: path)
        }
        return TLSCertificateFile(path: path, notAfter: Int64(timegm(&time)))
    }

    /// Whole days from `now` (seconds since the epoch) until the certificate expires,
    /// rounded down; negative once it has expired (-1 on its first day past notAfter).
    public func daysUntilExpiry(now: Int64) -> Int64 {
        let seconds = notAfter - now
        return seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
    }

    /// `daysUntilExpiry` from the current wall-clock time.
    public var daysUntilExpiry: Int64 {
        daysUntilExpiry(now: Int64(Glibc.time(nil)))
    }
}
