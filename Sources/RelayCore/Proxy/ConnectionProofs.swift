/// What one client connection has proved about who it is, kept between its requests: a
/// connection-bound scheme (NTLM, Negotiate) proves the connection itself, and a Basic
/// header verified once is not put through the slow password check again on every request.
///
/// A proof counts only under the credentials version it was made under (the user store's
/// generation): one made under another version is made again, so a deleted user or a
/// changed password does not live on in kept-alive connections.
struct ConnectionProofs {
    /// Set by a connection-bound scheme: later requests need no header.
    private var connectionPrincipal: AuthPrincipal?
    /// A `Proxy-Authorization` value verified on this connection, and whom it proved.
    private var verifiedCredentials: (value: String, principal: AuthPrincipal)?
    /// The credentials version when the request being authenticated asked.
    private var askedUnderVersion: UInt64?
    /// The credentials version when what is remembered was proved.
    private var rememberedUnderVersion: UInt64?

    /// Whether a later request may pass on something proved here.
    var remembersAny: Bool {
        connectionPrincipal != nil || verifiedCredentials != nil
    }

    /// Makes the next request prove itself again.
    mutating func forget() {
        connectionPrincipal = nil
        verifiedCredentials = nil
        rememberedUnderVersion = nil
    }

    /// Whom a request offering `authorization` (its one `Proxy-Authorization` value, or nil)
    /// is already proved to be, under the credentials `version` now; nil when it must be
    /// authenticated. Proofs made under another version are forgotten first.
    mutating func principal(offering authorization: String?, version: UInt64?) -> AuthPrincipal? {
        if remembersAny, version != rememberedUnderVersion {
            forget()
        }
        if let authorization {
            guard let verified = verifiedCredentials, verified.value == authorization else { return nil }
            return verified.principal
        }
        return connectionPrincipal
    }

    /// A request is being authenticated under the credentials `version`.
    mutating func asking(under version: UInt64?) {
        askedUnderVersion = version
    }

    /// The request asked about is proved to be `principal`, as far as `scope` reaches;
    /// `authorization` is the header it offered.
    mutating func granted(_ principal: AuthPrincipal, scope: AuthScope, authorization: String?) {
        switch scope {
        case .connection:
            connectionPrincipal = principal
            verifiedCredentials = nil
            rememberedUnderVersion = askedUnderVersion
        case .sameCredentials:
            if let authorization {
                verifiedCredentials = (authorization, principal)
                rememberedUnderVersion = askedUnderVersion
            }
        case .request:
            break
        }
    }
}
