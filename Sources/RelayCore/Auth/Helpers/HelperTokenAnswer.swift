/// A stateful (NTLM / Negotiate) helper's answer to one `YR` / `KK` token.
public enum HelperTokenAnswer: Sendable, Equatable, CustomStringConvertible {
    /// `TT <blob>`: send this token to the client in a 407 and wait for its next one.
    case `continue`([UInt8])
    /// `OK user=… [token=…]` or the older `AF [blob] <user>`: authenticated. The token, when
    /// present, is the server's last Negotiate token (mutual authentication).
    case done(user: String, token: [UInt8]?)
    /// `ERR` / `NA`: the credentials were refused (or the request could not be formed).
    case failed(reason: String?)
    /// `BH`, an unreadable answer, or the helper died, timed out, cannot start, or was
    /// replaced mid-handshake: end this handshake; a new one gets a working helper.
    case broken(reason: String)

    /// Names the case without token bytes (they authenticate a connection: never log them).
    public var description: String {
        switch self {
        case .continue(let token): "continue(\(token.count) bytes)"
        case .done(let user, let token): "done(\(user), \(token.map { "\($0.count) bytes" } ?? "no token"))"
        case .failed(let reason): "failed(\(reason ?? "-"))"
        case .broken(let reason): "broken(\(reason))"
        }
    }
}

extension HelperTokenAnswer {
    /// Reads an NTLM / Negotiate answer in either generation of the protocol:
    /// `TT token=<b64>` or `TT <b64>`; `OK user=<name> [token=<b64>]` or the older `AF`;
    /// `ERR [message=…]` or `NA <reason>`; `BH <reason>`.
    ///
    /// The older `AF` depends on `scheme`. NTLM's last message gets no answer token, so an
    /// NTLM helper's `AF` carries the user alone, and all of the rest of the line is that
    /// user: Samba's ntlm_auth writes `AF DOMAIN\user` unquoted, and account names may hold
    /// spaces (`AF CORP\john smith`). Splitting words as Squid does would read `CORP\john`
    /// as a token, or, with no domain prefix, `AF john smith` as user `smith` with token
    /// `john`. A Negotiate helper's `AF` is `<b64> <user>`, the user again being the rest
    /// of the line, `* <user>` (Samba's gss-spnego, no token), or the user alone; a first
    /// word counts as a token only if it decodes to a GSS-API output token.
    public init(reply: HelperReply, scheme: AuthConfig.Scheme, maxTokenLength: Int) {
        let decode = { (text: Substring) -> [UInt8]? in
            try? AuthCrypto.base64Decode(text, maxDecodedCount: maxTokenLength)
        }
        switch reply.code {
        case "TT":
            let noted = reply.notes["token"].map { Substring($0) }
            guard let text = noted ?? reply.words.first, let token = decode(text),
                  !token.isEmpty else {
                self = .broken(reason: "TT without a valid token")
                return
            }
            self = .continue(token)
        case "OK":
            let notes = reply.notes
            // negotiate_kerberos_auth rfc1738-escapes the name it sends.
            guard let user = notes["user"].map(HelperReply.rfc1738Unescape), !user.isEmpty else {
                self = .broken(reason: "OK without a user")
                return
            }
            guard let text = notes["token"] else {
                self = .done(user: user, token: nil)
                return
            }
            guard let token = decode(Substring(text)) else {
                self = .broken(reason: "OK with an invalid token")
                return
            }
            self = .done(user: user, token: token)
        case "AF":
            var text = Substring(reply.rest)  // leading spaces already dropped
            while text.last == " " { text.removeLast() }
            guard !text.isEmpty else {
                self = .broken(reason: "AF without a user")
                return
            }
            guard scheme == .negotiate, let space = text.firstIndex(of: " ") else {
                self = .done(user: String(text), token: nil)
                return
            }
            let first = text[..<space]
            let rest = String(text[space...].drop { $0 == " " })
            if first == "*" {
                // Samba's gss-spnego helper: `AF * DOMAIN\user` when it has no token.
                self = .done(user: rest, token: nil)
            } else if let token = decode(first), Self.looksLikeGSSToken(token) {
                self = .done(user: rest, token: token)
            } else {
                // No token in front (`AF john smith`): all of it is the user, never `smith`.
                self = .done(user: String(text), token: nil)
            }
        case "ERR", "NA": self = .failed(reason: reply.message)
        case "BH": self = .broken(reason: "BH \(reply.message ?? "")")
        default: self = .broken(reason: "unexpected answer \(reply.code)")
        }
    }

    /// An output token of GSS-API acceptance: a SPNEGO NegTokenResp (`[1]`, 0xA1) or a
    /// mechanism token in the InitialContextToken framing (`[APPLICATION 0]`, 0x60). A
    /// first word that decodes to anything else is part of the user's name.
    static func looksLikeGSSToken(_ token: [UInt8]) -> Bool {
        token.count >= 2 && (token[0] == 0xA1 || token[0] == 0x60)
    }
}
