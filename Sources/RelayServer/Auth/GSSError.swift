import CGSSAPI

/// Why a Negotiate (GSS-API / Kerberos) step or the acceptor credential failed.
///
/// `code` is stable and machine-readable (audit reason, logs); `majorStatus`/`minorStatus`
/// are what GSS-API returned, and `message` is their `gss_display_status` text. The text
/// names principals and key versions at most, never key material, so it is fit for an
/// audit row.
public struct GSSError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The stable codes this type carries.
    public enum Code {
        /// `gss_accept_sec_context` (or a name call after it) rejected the client's token.
        public static let gss = "gss-error"
        /// The keytab/principal could not be turned into an acceptor credential.
        public static let credentials = "gss-credentials"
        /// The client sent `Negotiate` with no token at all.
        public static let emptyToken = "gss-empty-token"
        /// The token exceeds `GSSAcceptContext.maximumTokenSize`; GSS never saw it.
        public static let tokenTooLarge = "gss-token-too-large"
        /// A token arrived after the handshake had already completed or failed.
        public static let contextFinished = "gss-context-finished"
    }

    /// One of `GSSError.Code`.
    public let code: String
    /// The GSS major status, or 0 when GSS-API was not called.
    public let majorStatus: UInt32
    /// The mechanism's minor status (for Kerberos a `krb5_error_code`), or 0.
    public let minorStatus: UInt32
    /// `<major text>: <minor text>` from `gss_display_status`, or a description of the refusal.
    public let message: String

    /// An error with a message of the caller's own (no GSS status involved).
    public init(code: String, message: String) {
        self.code = code
        self.majorStatus = 0
        self.minorStatus = 0
        self.message = message
    }

    /// An error from a GSS call, described by the library itself. Call it on the thread
    /// that made the failing call: MIT keeps the detailed minor text thread-locally.
    init(code: String, major: OM_uint32, minor: OM_uint32, mech: gss_OID? = nil) {
        self.code = code
        self.majorStatus = major
        self.minorStatus = minor
        let majorText = GSSError.displayStatus(major, type: GSS_C_GSS_CODE, mech: nil)
        // A zero minor status means the mechanism added nothing; "Unknown error" would mislead.
        let minorText = minor == 0 ? "no mechanism detail" : GSSError.displayStatus(minor, type: GSS_C_MECH_CODE, mech: mech)
        self.message = "\(majorText): \(minorText)"
    }

    public var description: String { "\(code): \(message)" }

    /// All the lines `gss_display_status` has for one status value, joined with "; ".
    /// A major status can carry a routine error and supplementary bits, each its own line.
    private static func displayStatus(_ status: OM_uint32, type: Int32, mech: gss_OID?) -> String {
        var lines: [String] = []
        var messageContext: OM_uint32 = 0
        repeat {
            var minor: OM_uint32 = 0
            var text = gss_buffer_desc()
            let major = gss_display_status(&minor, status, type, mech ?? CGSSAPI_GSS_C_NO_OID(), &messageContext, &text)
            if CGSSAPI_GSS_ERROR(major) != 0 { break }
            lines.append(text.takeString())
        } while messageContext != 0 && lines.count < 8
        return lines.isEmpty ? "status \(status)" : lines.joined(separator: "; ")
    }
}
