import CSQLite
import RelayCore

/// The outcome of recomputing an audit chain.
public enum AuditVerifyResult: Equatable, Sendable {
    /// Every row continues the chain; `records` rows were checked.
    case ok(records: Int)
    /// `seq` is the first row that fails (a gap, a wrong `prev_hash`, a hash that does not
    /// match the row, or an unreadable field); 0 when the database itself cannot be read.
    case broken(seq: Int64, why: String)
}

extension AuditLog {
    /// Recomputes the whole chain in seq order from a read-only connection: seq must start
    /// at 1 and rise by exactly 1, each `prev_hash` must be the previous row's `hash`
    /// (genesis for the first), and each `hash` must equal the chain hash of the row's
    /// canonical bytes under `hashKey`. Safe to run while a writer appends.
    public static func verify(path: String, hashKey: [UInt8]? = nil) -> AuditVerifyResult {
        if hashKey?.isEmpty == true {
            return .broken(seq: 0, why: "the audit hash key is empty")
        }
        return AuditVerifier(chain: AuditHashChain(key: hashKey)).verify(path: path)
    }
}

private struct AuditVerifier {
    let chain: AuditHashChain

    private struct RowError: Error {
        let why: String
    }

    func verify(path: String) -> AuditVerifyResult {
        var db: OpaquePointer?
        SQLite.configureProcess()
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close_v2(db) }
        guard rc == SQLITE_OK, let db else {
            return .broken(seq: 0, why: "cannot open \(path): \(SQLite.message(db))")
        }
        sqlite3_busy_timeout(db, AuditLog.defaultBusyTimeoutMillis)
        var stmt: OpaquePointer?
        guard let present = AuditSchema.presentColumns(in: db),
              sqlite3_prepare_v2(db, AuditSchema.selectAll(present: present), -1, &stmt, nil) == SQLITE_OK, let stmt else {
            return .broken(seq: 0, why: "cannot read audit_events: \(SQLite.message(db))")
        }
        defer { sqlite3_finalize(stmt) }

        var expectedSeq: Int64 = 1
        var prevHash = AuditHashChain.genesis
        var count = 0
        while true {
            let step = sqlite3_step(stmt)
            if step == SQLITE_DONE { return .ok(records: count) }
            guard step == SQLITE_ROW else {
                return .broken(seq: expectedSeq, why: "read failed after seq \(expectedSeq - 1): \(SQLite.message(db))")
            }
            guard sqlite3_column_type(stmt, 0) == SQLITE_INTEGER else {
                return .broken(seq: expectedSeq, why: "seq after \(expectedSeq - 1) is not an integer")
            }
            let seq = sqlite3_column_int64(stmt, 0)
            guard seq == expectedSeq else {
                return .broken(seq: seq, why: expectedSeq == 1
                    ? "chain starts at seq \(seq), expected 1"
                    : "seq \(seq) follows \(expectedSeq - 1): rows \(expectedSeq)...\(seq - 1) are missing")
            }
            do throws(RowError) {
                let (ts, record) = try readRecord(stmt)
                let storedPrev = try requiredText(stmt, 20)
                let storedHash = try requiredText(stmt, 21)
                guard storedPrev == prevHash else {
                    return .broken(seq: seq, why: "prev_hash does not match the hash of seq \(seq - 1)")
                }
                let computed = chain.next(prevHashHex: prevHash, canonical: AuditCanonical.encode(seq: seq, ts: ts, record))
                guard storedHash == computed else {
                    return .broken(seq: seq, why: chain.isKeyed
                        ? "hash does not match the row (altered, or another key)"
                        : "hash does not match the row (altered, or written with a key)")
                }
                prevHash = storedHash
            } catch {
                return .broken(seq: seq, why: error.why)
            }
            expectedSeq += 1
            count += 1
        }
    }

    /// Rebuilds the record from a row, refusing anything the writer could not have stored
    /// (wrong storage class, invalid UTF-8, unknown enum value) instead of coercing it.
    private func readRecord(_ stmt: OpaquePointer) throws(RowError) -> (String, AuditRecord) {
        let ts = try requiredText(stmt, 1)
        let eventText = try requiredText(stmt, 2)
        guard let event = AuditEvent(rawValue: eventText) else { throw RowError(why: "unknown event \(eventText)") }
        let decisionText = try requiredText(stmt, 11)
        guard let decision = AuditDecision(rawValue: decisionText) else {
            throw RowError(why: "unknown decision \(decisionText)")
        }
        let simulated = try requiredInteger(stmt, 19)
        guard simulated == 0 || simulated == 1 else { throw RowError(why: "simulated is \(simulated), not 0/1") }
        let ech = try optionalInteger(stmt, 23)
        if let ech, ech != 0 && ech != 1 { throw RowError(why: "tls_ech is \(ech), not 0/1") }
        let status = try optionalInteger(stmt, 13)
        guard status.map({ Int(exactly: $0) != nil }) ?? true else { throw RowError(why: "status out of range") }
        let record = AuditRecord(
            event: event,
            timestampMicros: 0,  // the stored `ts` text is what the hash covers
            session: try requiredText(stmt, 3),
            client: try requiredText(stmt, 4),
            listener: try requiredText(stmt, 5),
            principal: try optionalText(stmt, 6),
            scheme: try optionalText(stmt, 7),
            target: try optionalText(stmt, 8),
            resolved: try optionalText(stmt, 9),
            rule: try optionalText(stmt, 10),
            decision: decision,
            reason: try requiredText(stmt, 12),
            status: status.map { Int($0) },
            bytesUp: try optionalInteger(stmt, 14),
            bytesDown: try optionalInteger(stmt, 15),
            durationMs: try optionalInteger(stmt, 16),
            tlsVersion: try optionalText(stmt, 17),
            tlsCipher: try optionalText(stmt, 18),
            simulated: simulated == 1,
            tlsSNI: try optionalText(stmt, 22),
            tlsECH: ech.map { $0 == 1 },
            clientTLSVersion: try optionalText(stmt, 24),
            clientTLSCipher: try optionalText(stmt, 25)
        )
        return (ts, record)
    }

    private func optionalText(_ stmt: OpaquePointer, _ index: Int32) throws(RowError) -> String? {
        switch SQLite.text(stmt, index) {
        case .null:
            return nil
        case .text(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw RowError(why: "\(AuditSchema.columns[Int(index)]) is not valid UTF-8")
            }
            return text
        case .wrongType(let type):
            throw RowError(why: "\(AuditSchema.columns[Int(index)]) has storage class \(type), expected TEXT")
        }
    }

    private func requiredText(_ stmt: OpaquePointer, _ index: Int32) throws(RowError) -> String {
        guard let text = try optionalText(stmt, index) else {
            throw RowError(why: "\(AuditSchema.columns[Int(index)]) is NULL")
        }
        return text
    }

    private func optionalInteger(_ stmt: OpaquePointer, _ index: Int32) throws(RowError) -> Int64? {
        switch sqlite3_column_type(stmt, index) {
        case SQLITE_NULL:
            return nil
        case SQLITE_INTEGER:
            return sqlite3_column_int64(stmt, index)
        case let type:
            throw RowError(why: "\(AuditSchema.columns[Int(index)]) has storage class \(type), expected INTEGER")
        }
    }

    private func requiredInteger(_ stmt: OpaquePointer, _ index: Int32) throws(RowError) -> Int64 {
        guard let value = try optionalInteger(stmt, index) else {
            throw RowError(why: "\(AuditSchema.columns[Int(index)]) is NULL")
        }
        return value
    }
}
