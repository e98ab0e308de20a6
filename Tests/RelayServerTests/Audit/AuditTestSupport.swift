import CSQLite
import Foundation
import RelayCore
import RelayServer
import Synchronization

/// A fresh directory per test, removed when the value is released.
final class TempDir: @unchecked Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("audit-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// A column value read straight from SQLite, storage class included.
enum SQLValue: Equatable, CustomStringConvertible {
    case null
    case integer(Int64)
    case text(String)

    var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let v): "\(v)"
        case .text(let s): "'\(s)'"
        }
    }

    var int: Int64? { if case .integer(let v) = self { v } else { nil } }
    var string: String? { if case .text(let s) = self { s } else { nil } }
}

/// A second, independent connection for reading back and tampering, as a reviewer (or an
/// attacker) would.
enum SQL {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func query(_ path: String, _ sql: String) throws -> [[String: SQLValue]] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil) == SQLITE_OK else {
            defer { sqlite3_close_v2(db) }
            throw Failure(description: "open: \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_close_v2(db) }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else {
            throw Failure(description: "prepare: \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(stmt) }
        var rows: [[String: SQLValue]] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return rows }
            guard rc == SQLITE_ROW else { throw Failure(description: "step: \(String(cString: sqlite3_errmsg(db)))") }
            var row: [String: SQLValue] = [:]
            for i in 0..<sqlite3_column_count(stmt) {
                let name = String(cString: sqlite3_column_name(stmt, i))
                switch sqlite3_column_type(stmt, i) {
                case SQLITE_NULL: row[name] = .null
                case SQLITE_INTEGER: row[name] = .integer(sqlite3_column_int64(stmt, i))
                default:
                    let base = sqlite3_column_text(stmt, i)
                    let count = Int(sqlite3_column_bytes(stmt, i))
                    row[name] = .text(String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self))
                }
            }
            rows.append(row)
        }
    }

    static func exec(_ path: String, _ sql: String, create: Bool = false) throws {
        var db: OpaquePointer?
        defer { sqlite3_close_v2(db) }
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), nil) == SQLITE_OK else {
            throw Failure(description: "open: \(String(cString: sqlite3_errmsg(db)))")
        }
        sqlite3_busy_timeout(db, 5_000)
        var errmsg: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &errmsg) == SQLITE_OK else {
            defer { sqlite3_free(errmsg) }
            throw Failure(description: "exec: \(errmsg.map { String(cString: $0) } ?? "?")")
        }
    }

    /// Runs the `sqlite3` command-line shell, the tool an operator would reach for.
    static func shell(_ path: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, sql]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "sqlite3 exited \(process.terminationStatus)")
        }
    }
}

/// Collects callback results from the audit queue.
final class Outcomes: Sendable {
    private let results = Mutex<[Int: [Result<Int64, AuditError>]]>([:])

    func callback(_ id: Int) -> @Sendable (Result<Int64, AuditError>) -> Void {
        { result in self.results.withLock { $0[id, default: []].append(result) } }
    }

    var all: [Int: [Result<Int64, AuditError>]] { results.withLock { $0 } }

    func seqs() -> [Int64] {
        all.values.flatMap { $0 }.compactMap { try? $0.get() }
    }
}

enum Records {
    static func sample(_ n: Int, event: AuditEvent = .tunnelOpen) -> AuditRecord {
        AuditRecord(
            event: event,
            timestampMicros: 1_796_062_904_000_000 + Int64(n),
            session: "s-\(n)",
            client: "127.0.0.1:\(40000 + n % 20000)",
            listener: "main",
            principal: n % 3 == 0 ? nil : "user\(n)@CORP",
            scheme: n % 3 == 0 ? nil : "basic",
            target: "app\(n % 7).corp.example:443",
            resolved: "10.0.\(n % 250).1:443",
            rule: "server .corp.example:443",
            decision: n % 5 == 0 ? .deny : .allow,
            reason: n % 5 == 0 ? ReasonCode.notRegistered.rawValue : ReasonCode.allowed.rawValue,
            status: n % 5 == 0 ? 403 : nil,
            bytesUp: Int64(n * 10),
            bytesDown: Int64(n * 100),
            durationMs: n % 2 == 0 ? Int64(n) : nil,
            tlsVersion: n % 4 == 0 ? "TLSv1.3" : nil,
            tlsCipher: n % 4 == 0 ? "TLS_AES_256_GCM_SHA384" : nil,
            simulated: n % 11 == 0
        )
    }

    /// Opens a log, appends `count` samples, flushes and closes it.
    static func writeLog(at path: String, count: Int, first: Int = 1, hashKey: [UInt8]? = nil) throws {
        let log = try AuditLog(path: path, hashKey: hashKey)
        for n in first..<(first + count) {
            log.append(sample(n))
        }
        log.close()
    }
}
