import CRelayShims

/// Sends `bytes` on `fd` in one call, never raising SIGPIPE: a best-effort answer on a
/// socket about to be closed, such as a refusal at accept. What the socket does not take
/// at once is dropped.
public func sendBestEffort(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { crelay_send_nosignal(fd, $0.baseAddress, $0.count) }
}
