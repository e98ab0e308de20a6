import COpenSSL

/// The principal a client certificate names: the first subjectAltName email, else the
/// subject's common name (what the README promises for `auth client-cert`).
enum TLSCertificateIdentity {
    static func identity(of certificate: OpaquePointer) -> String? {
        email(of: certificate) ?? commonName(of: certificate)
    }

    private static func email(of certificate: OpaquePointer) -> String? {
        guard let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) else { return nil }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        for index in 0..<crelay_sk_GENERAL_NAME_num(names) {
            if let email = crelay_GENERAL_NAMES_email(names, index), let text = string(email), !text.isEmpty {
                return text
            }
        }
        return nil
    }

    private static func commonName(of certificate: OpaquePointer) -> String? {
        guard let subject = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(subject, index),
              let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length > 0, let utf8 else { return nil }
        defer { crelay_OPENSSL_free(utf8) }
        return validated(UnsafeBufferPointer(start: utf8, count: Int(length)))
    }

    private static func string(_ value: UnsafePointer<ASN1_STRING>) -> String? {
        guard let data = ASN1_STRING_get0_data(value) else { return nil }
        return validated(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value))))
    }

    /// Text without NULs or control characters: a name with them is no identity (a NUL
    /// would let "admin\0.evil" read as "admin" further on).
    private static func validated(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
