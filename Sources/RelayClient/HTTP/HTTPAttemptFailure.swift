import RelayCore

/// How one attempt on one relay failed: the error for the caller, and, when the request
/// might go to another relay, the failure `RetryDecision` judges. Nil `retry` is final.
struct HTTPAttemptFailure: Error {
    let error: RelayHTTPError
    let retry: RetryDecision.Failure?
    /// The relay itself failed (unreachable, timed out, refused): it goes into back-off.
    let relayAtFault: Bool

    static func final(_ error: RelayHTTPError) -> HTTPAttemptFailure {
        HTTPAttemptFailure(error: error, retry: nil, relayAtFault: false)
    }

    /// A failure to reach the relay at all. A cancelled or closed call says nothing about the
    /// relay: it is final and leaves the relay's health alone, or a cancelled request would put
    /// every relay of the list into back-off, for the tunnels sharing the selector too.
    static func relayConnect(_ error: RelayClientError, relay: RelayEndpoint) -> HTTPAttemptFailure {
        if error.isLocalEnd { return .final(.transport(error, "connecting to relay \(relay)")) }
        let failure: RetryDecision.Failure = error.code == .timeout ? .relayConnectTimedOut : .relayConnectFailed
        return HTTPAttemptFailure(error: .transport(error, "connecting to relay \(relay)"), retry: failure, relayAtFault: true)
    }
}

extension RelayClientError {
    /// This side ended the call (the task was cancelled, or the stream closed): not the
    /// relay's doing.
    var isLocalEnd: Bool { code == .cancelled || code == .closed }
}
