import RelayCore

/// What the trail gave up while it could not write (a full disk, an I/O error): a count per
/// event, and the close rows themselves, so that once it can write again it says what is
/// missing and no open row is left without its close row.
struct AuditLostRows: Sendable {
    /// Close rows kept to be written again; beyond this many only their count is kept.
    static let maxKeptCloseRows = 100_000

    private(set) var counts: [AuditEvent: Int] = [:]
    private(set) var closeRows: [AuditRecord] = []
    /// Close rows given up beyond `maxKeptCloseRows`: their open rows stay open.
    private(set) var unkeptCloseRows = 0
    private var firstMicros = Int64.max
    private var lastMicros = Int64.min
    private var lastError: AuditError?

    var isEmpty: Bool { counts.isEmpty && closeRows.isEmpty }

    /// Counts `record` as lost because of `error`, keeping it if it closes a stream.
    mutating func add(_ record: AuditRecord, error: AuditError?) {
        counts[record.event, default: 0] += 1
        firstMicros = min(firstMicros, record.timestampMicros)
        lastMicros = max(lastMicros, record.timestampMicros)
        if let error { lastError = error }
        if record.event.openingEvent != nil { keep(record) }
    }

    /// Adds what `other` holds (a write of its rows that failed in turn).
    mutating func merge(_ other: AuditLostRows) {
        for (event, count) in other.counts { counts[event, default: 0] += count }
        for record in other.closeRows { keep(record) }
        unkeptCloseRows += other.unkeptCloseRows
        firstMicros = min(firstMicros, other.firstMicros)
        lastMicros = max(lastMicros, other.lastMicros)
        lastError = other.lastError ?? lastError
    }

    private mutating func keep(_ closeRow: AuditRecord) {
        if closeRows.count < Self.maxKeptCloseRows {
            closeRows.append(closeRow)
        } else {
            unkeptCloseRows += 1
        }
    }

    /// What is still owed once the first `count` rows of `rows` are stored: the close rows
    /// after them (the summary, written, is not owed again).
    func owed(afterWriting count: Int) -> AuditLostRows {
        guard count > 0 else { return self }
        var rest = AuditLostRows()
        let summaries = counts.isEmpty ? 0 : 1
        rest.closeRows = Array(closeRows.dropFirst(max(0, count - summaries)))
        rest.lastError = lastError
        return rest
    }

    /// The rows that say what was lost, stamped `micros`: one `audit-lost` row counting the
    /// lost rows by event, then each kept close row again, its reason now `audit-lost:`
    /// and the reason it had, its byte counts and status as they were measured.
    func rows(micros: Int64, session: String, formatTime: (Int64) -> String) -> [AuditRecord] {
        let again = closeRows.map { lost in
            var row = lost
            row.timestampMicros = micros
            if !row.reason.hasPrefix(Self.reasonPrefix) { row.reason = Self.reasonPrefix + row.reason }
            return row
        }
        guard !counts.isEmpty else { return again }
        let byEvent = counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($1) \($0.rawValue)" }
        var detail = "\(counts.values.reduce(0, +)) rows could not be stored between \(formatTime(firstMicros)) "
            + "and \(formatTime(lastMicros)): \(byEvent.joined(separator: ", "))"
        if !closeRows.isEmpty { detail += "; their \(closeRows.count) close rows follow as audit-lost" }
        if unkeptCloseRows > 0 { detail += "; \(unkeptCloseRows) more close rows were not kept" }
        if let lastError { detail += " (\(lastError))" }
        let summary = AuditRecord(event: .auditLost, timestampMicros: micros, session: session, client: "*",
                                  listener: "*", decision: .deny, reason: Self.reasonPrefix + detail)
        return [summary] + again
    }

    private static let reasonPrefix = "\(ReasonCode.auditLost.rawValue): "
}
