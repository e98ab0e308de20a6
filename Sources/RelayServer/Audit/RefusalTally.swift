import RelayCore
import Synchronization

/// Refusals that come before any request (a header timeout, a connection limit, no
/// descriptor left), counted per source, listener and reason and recorded as one `refused`
/// row per interval with the count, the model of the `audit-backlog` row: a flood of silent
/// or slow connections costs the trail a row per source and interval, not a row per
/// connection, so it cannot fill the disk and stop the relay. Refusals of requests keep a
/// row each.
final class RefusalTally: Sendable {
    /// What one row counts: refusals of one reason, from one source, on one listener.
    struct Key: Hashable, Sendable {
        /// nil: every source past `maxSources` in this interval.
        var source: ClientSource?
        var listener: String
        var reason: ReasonCode
        var status: Int?
    }

    /// How many, and over what span of time.
    struct Count: Sendable {
        var connections = 0
        var firstMicros = Int64.max
        var lastMicros = Int64.min
        /// Why the first of them failed, when the refusal has more to say than its reason
        /// (OpenSSL's account of a failed TLS handshake).
        var firstDetail: String?
    }

    /// Sources counted apart per interval; the rest share one row (client `*`), so the
    /// rows of one interval stay bounded however many addresses a flood comes from.
    static let maxSources = 1000

    private let counts = Mutex<[Key: Count]>([:])

    /// Counts one refusal; `detail` says why, kept for the first of its row.
    func count(_ reason: ReasonCode, status: Int?, source: ClientSource, listener: String, detail: String? = nil) {
        let now = AuditTimestamp.nowMicros()
        counts.withLock { counts in
            var key = Key(source: source, listener: listener, reason: reason, status: status)
            if counts[key] == nil && counts.count >= Self.maxSources { key.source = nil }
            counts[key, default: Count()].add(at: now, detail: detail)
        }
    }

    /// What was counted since the last call, forgotten here.
    func take() -> [(key: Key, count: Count)] {
        counts.withLock { counts in
            defer { counts.removeAll(keepingCapacity: true) }
            return counts.map { ($0.key, $0.value) }
        }
    }
}

extension RefusalTally.Count {
    mutating func add(at micros: Int64, detail: String? = nil) {
        if connections == 0 { firstDetail = detail }
        connections += 1
        firstMicros = min(firstMicros, micros)
        lastMicros = max(lastMicros, micros)
    }

    /// The words after the reason code in the row: how many, and when.
    var detail: String {
        "\(connections) connection\(connections == 1 ? "" : "s") between \(AuditTimestamp.format(micros: firstMicros)) "
            + "and \(AuditTimestamp.format(micros: lastMicros))" + (firstDetail.map { "; first: \($0)" } ?? "")
    }
}
