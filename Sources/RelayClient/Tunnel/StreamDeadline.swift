/// Runs `body` on `stream`, closing the stream if `body` is not done within `timeout`; a
/// call cut that way throws `timeout` rather than the `closed` the stream reports.
func withStreamDeadline<T: Sendable>(
    _ timeout: Duration, closing stream: any ClientByteStream, doing what: String,
    _ body: () async throws(RelayClientError) -> T
) async throws(RelayClientError) -> T {
    let watchdog = Task { () -> Bool in
        do {
            try await Task.sleep(for: timeout)
        } catch {
            return false
        }
        stream.close()
        return true
    }
    let outcome: Result<T, RelayClientError>
    do throws(RelayClientError) {
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    watchdog.cancel()
    if await watchdog.value {
        throw RelayClientError(.timeout, "\(what): no answer within \(timeout)")
    }
    return try outcome.get()
}
