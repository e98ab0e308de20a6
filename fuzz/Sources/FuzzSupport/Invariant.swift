/// Stops the run when an invariant fails. libFuzzer records a trap as a crash and keeps the
/// input that caused it, so a broken invariant is reported exactly like a crash.
public func invariant(_ condition: Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #file, line: UInt = #line) {
    if !condition {
        fatalError("invariant broken: \(message())", file: file, line: line)
    }
}
