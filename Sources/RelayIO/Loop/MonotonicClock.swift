import Glibc

/// Nanoseconds on CLOCK_MONOTONIC: for timeouts and idle sweeps, never for audit timestamps.
public func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

extension Duration {
    /// The whole duration in nanoseconds (negative durations count as zero), for deadlines
    /// on the monotonic clock. Using `components.seconds` alone would turn 500ms into 0.
    public var monotonicNanos: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// The earlier of two optional instants (nil when neither is set): the oldest of the
/// waits a connection has under way, for the stall timeout.
public func earliest(_ one: UInt64?, _ other: UInt64?) -> UInt64? {
    switch (one, other) {
    case let (one?, other?): return min(one, other)
    case let (one?, nil), let (nil, one?): return one
    case (nil, nil): return nil
    }
}
