extension ReasonCode {
    /// The refusal reason for an authentication failure of the auth core.
    public init(_ failure: AuthFailureReason) {
        switch failure {
        case .badPassword: self = .badPassword
        case .unknownUser: self = .unknownUser
        case .staleNonce: self = .staleNonce
        case .replayedNonce: self = .replayedNonce
        case .unsupported: self = .unsupportedAuth
        case .badRequest: self = .badCredentials
        default: self = .internalError
        }
    }
}
