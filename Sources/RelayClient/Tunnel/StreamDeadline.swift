import Synchronization

/// Runs `body` on `stream`, closing the stream if `body` is not done within `timeout`; a
/// call cut that way throws `timeout` rather than the `closed` the stream reports. Whichever
/// settles first wins: a body done in time never finds its stream closed by a late timer.
func withStreamDeadline<T: Sendable>(
    _ timeout: Duration, closing stream: any ClientByteStream, doing what: String,
    _ body: () async throws(RelayClientError) -> T
) async throws(RelayClientError) -> T {
    let settled = SettledFlag()
    let watchdog = Task { () -> Bool in
        do {
            try await Task.sleep(for: timeout)
        } catch {
            return false
        }
        guard settled.settle() else { return false }
        stream.close()
        return true
    }
    let outcome: Result<T, RelayClientError>
    do throws(RelayClientError) {
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    let firedFirst = !settled.settle()
    watchdog.cancel()
    if firedFirst, await watchdog.value {
        throw RelayClientError(.timeout, "\(what): no answer within \(timeout)")
    }
    return try outcome.get()
}

/// Set once, by the body finishing or by the deadline passing, whichever comes first.
private final class SettledFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    /// True for the first caller only.
    func settle() -> Bool {
        !flag.exchange(true, ordering: .acquiringAndReleasing)
    }
}
