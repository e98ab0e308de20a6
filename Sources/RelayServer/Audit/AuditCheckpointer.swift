import CSQLite
import Dispatch
import Glibc

/// Moves WAL pages into the database file from its own connection and thread, so the writer
/// never stops mid-stream to copy pages and fsync the database (SQLite's automatic checkpoint
/// runs inside a commit, stalling every stream waiting for that commit's open row).
///
/// PASSIVE checkpoints never block the writer or readers. The writer keeps a high automatic
/// checkpoint threshold as a safety net in case this thread falls behind.
/// Touched only on `queue`.
final class AuditCheckpointer: @unchecked Sendable {  // after init, `db` and `databaseFile` change only on `queue`
    /// How often to checkpoint: small enough that the WAL stays a few MiB under load.
    static let interval: DispatchTimeInterval = .milliseconds(250)

    private let queue = DispatchQueue(label: "dynrelay.audit.checkpoint", qos: .utility)
    private var db: OpaquePointer?
    private let timer: DispatchSourceTimer
    /// The database file opened once more, only to sync it (see `checkpoint`); -1 if it
    /// could not be opened, which only forgoes that.
    private var databaseFile: Int32 = -1

    /// Opens a second connection to `path` (the writer created the file and chose WAL).
    init(path: String) throws(AuditError) {
        var handle: OpaquePointer?
        SQLite.configureProcess()
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = SQLite.message(handle)
            sqlite3_close_v2(handle)
            throw AuditError(code: AuditError.Code.open, sqliteCode: rc, message: "checkpoint connection: \(message)")
        }
        sqlite3_busy_timeout(handle, 1000)
        // A connection learns the database is in WAL mode only on its first read; until then
        // a checkpoint is a silent no-op.
        let read = sqlite3_exec(handle, "SELECT count(*) FROM sqlite_master", nil, nil, nil)
        guard read == SQLITE_OK else {
            let message = SQLite.message(handle)
            sqlite3_close_v2(handle)
            throw AuditError(code: AuditError.Code.open, sqliteCode: read, message: "checkpoint connection: \(message)")
        }
        db = handle
        databaseFile = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(50))
        timer.setEventHandler { [unowned self] in checkpoint(SQLITE_CHECKPOINT_PASSIVE) }
        timer.resume()
    }

    /// Stops the timer, folds the whole WAL into the database (TRUNCATE), closes the connection.
    /// Call after the writer has committed its last batch.
    func close() {
        timer.cancel()
        queue.sync {
            checkpoint(SQLITE_CHECKPOINT_TRUNCATE)
            if let db {
                sqlite3_close_v2(db)
                self.db = nil
            }
            if databaseFile >= 0 {
                Glibc.close(databaseFile)
                databaseFile = -1
            }
        }
    }

    private func checkpoint(_ mode: Int32) {
        guard let db else { return }
        var backfilled: Int32 = 0
        // Busy (a reader or the writer holds what a stronger mode needs) just means later.
        _ = sqlite3_wal_checkpoint_v2(db, nil, mode, nil, &backfilled)
        // Under steady load a commit lands before a passive checkpoint finishes, so SQLite
        // syncs the pages it copied only when one finally completes, inside a writer's
        // commit, with every waiting open row behind it (about 14 ms once a second in a trace
        // at full rate). Syncing the copied pages here, off the writer's path, keeps that
        // final sync short. It only makes data durable sooner.
        if mode == SQLITE_CHECKPOINT_PASSIVE, backfilled > 0, databaseFile >= 0 {
            _ = fdatasync(databaseFile)
        }
    }
}
