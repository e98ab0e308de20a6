import Synchronization

/// The one resumption of a suspended call, shared by every path that may end it (the loop's
/// event, a timer, a cancellation, a close): the first to call `resume` wins and the others
/// do nothing, so a call resumes exactly once however its endings race.
final class ResumeOnce<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Result<Value, RelayClientError>, Never>?>

    init(_ continuation: CheckedContinuation<Result<Value, RelayClientError>, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(_ result: Result<Value, RelayClientError>) {
        continuation.withLock { $0.take() }?.resume(returning: result)
    }

    func succeed(_ value: Value) { resume(.success(value)) }

    func fail(_ error: RelayClientError) { resume(.failure(error)) }
}

/// Suspends until `start`'s `ResumeOnce` is resumed. Cancelling the task runs `onCancel`,
/// which must end the call (typically by closing the stream with `cancelled`); it may run
/// before `start` when the task was cancelled already, so whatever it closes must refuse
/// the call that comes after.
func suspend<Value: Sendable>(onCancel: @Sendable () -> Void,
                              _ start: (ResumeOnce<Value>) -> Void) async throws(RelayClientError) -> Value {
    let result: Result<Value, RelayClientError> = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            start(ResumeOnce(continuation))
        }
    } onCancel: {
        onCancel()
    }
    return try result.get()
}
