/// Durations as the audit trail records them, from monotonic nanoseconds.
public enum ProxySessionTiming {
    /// Whole milliseconds from `start` to `end`; 0 if the clock did not move forward.
    public static func milliseconds(from start: UInt64, to end: UInt64) -> Int64 {
        end > start ? Int64((end - start) / 1_000_000) : 0
    }
}
