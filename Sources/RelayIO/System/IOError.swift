import Glibc

/// An I/O failure with the errno that caused it and the call that failed.
public struct IOError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The system call (or step) that failed, e.g. "connect".
    public let operation: String
    /// The errno value.
    public let errno: Int32

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "\(operation): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
