import Glibc

/// What a nonblocking system call came to once interruptions are retried.
public enum SystemCallResult<Value> {
    /// The call did its work and returned this (a count, a descriptor; 0 can mean EOF).
    case processed(Value)
    /// EAGAIN (EWOULDBLOCK): nothing could be done now; wait for readiness.
    case wouldBlock
}

/// Runs `call`, a system call that returns -1 and sets errno when it fails, the one way
/// RelayIO makes system calls: EINTR runs it again (a signal says nothing about the
/// descriptor), EAGAIN is `.wouldBlock`, EBADF, EFAULT and ENOTSOCK stop the process
/// (only a bug in this process hands the kernel a bad descriptor or address; carrying on
/// could act on a descriptor that now belongs to someone else), and any other errno is
/// thrown with `operation` named.
@inline(__always)
public func systemCall<Value: FixedWidthInteger>(_ operation: @autoclosure () -> String,
                                                 _ call: () -> Value) throws(IOError) -> SystemCallResult<Value> {
    let result = retryingInterruptions(call)
    guard result == -1 else { return .processed(result) }
    let code = errno
    if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
    preconditionNotProgrammerError(code, operation())
    throw IOError(operation(), errno: code)
}

/// Runs `call` again while it fails with EINTR and returns its last result, errno as the
/// call left it: for a caller that reads errno itself (an accept under a descriptor
/// reserve, which tells EMFILE apart).
@inline(__always)
public func retryingInterruptions<Value: FixedWidthInteger>(_ call: () -> Value) -> Value {
    while true {
        let result = call()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}

/// Stops the process on an errno that only a programming mistake produces (EBADF, EFAULT,
/// ENOTSOCK): never a peer's doing, and going on could touch a descriptor that another
/// part of the process has since opened under the same number.
public func preconditionNotProgrammerError(_ code: Int32, _ operation: @autoclosure () -> String) {
    if code == EBADF || code == EFAULT || code == ENOTSOCK {
        preconditionFailure("\(operation()) on a bad descriptor or address: errno \(code)")
    }
}
