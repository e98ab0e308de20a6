#include "CSQLiteBaseline.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

struct auditbench_baseline {
    sqlite3 *db;
    sqlite3_stmt *begin;
    sqlite3_stmt *commit;
    sqlite3_stmt *insert;
};

/* The audit table's columns and types (Sources/RelayServer/Audit/AuditSchema.swift), so a
   row costs SQLite what an audit row does. */
static const char *create_table =
    "CREATE TABLE IF NOT EXISTS rows (seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, event TEXT NOT NULL, "
    "session TEXT NOT NULL, client TEXT NOT NULL, listener TEXT NOT NULL, principal TEXT, scheme TEXT, "
    "target TEXT, resolved TEXT, rule TEXT, decision TEXT NOT NULL, reason TEXT NOT NULL, status INTEGER, "
    "bytes_up INTEGER, bytes_down INTEGER, duration_ms INTEGER, tls_version TEXT, tls_cipher TEXT, "
    "simulated INTEGER NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)";

static const char *insert_row =
    "INSERT INTO rows (ts, event, session, client, listener, principal, scheme, target, resolved, rule, "
    "decision, reason, status, bytes_up, bytes_down, duration_ms, tls_version, tls_cipher, simulated, "
    "prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
    "?17, ?18, ?19, ?20, ?21)";

/* A chain link's size without its arithmetic: the baseline stores what the trail stores. */
static const char *hash_hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

static int fail(sqlite3 *db, const char *step, char *error, int error_size) {
    snprintf(error, (size_t)error_size, "%s: %s", step, db ? sqlite3_errmsg(db) : "out of memory");
    return 1;
}

auditbench_baseline *auditbench_baseline_open(const char *path, int synchronous_full, char *error, int error_size) {
    /* As the relay does: its writer turns SQLite's memory statistics off too. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    auditbench_baseline *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(error, (size_t)error_size, "out of memory");
        return NULL;
    }
    const char *sync = synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
    if (sqlite3_open_v2(path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK
        || sqlite3_exec(b->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK
        || sqlite3_exec(b->db, sync, NULL, NULL, NULL) != SQLITE_OK
        || sqlite3_exec(b->db, create_table, NULL, NULL, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(b->db, "BEGIN IMMEDIATE", -1, &b->begin, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(b->db, "COMMIT", -1, &b->commit, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(b->db, insert_row, -1, &b->insert, NULL) != SQLITE_OK) {
        fail(b->db, path, error, error_size);
        auditbench_baseline_close(b);
        return NULL;
    }
    return b;
}

static int step_and_reset(sqlite3_stmt *stmt) {
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The same values Sources/auditbench/SampleRecords.swift gives row n. */
static int insert_one(auditbench_baseline *b, long long n) {
    char ts[40], session[32], client[32], principal[40], target[48], resolved[32];
    long long micros = 1796062904000000LL + n;
    snprintf(ts, sizeof ts, "2026-12-01T00:00:%02lld.%06lldZ", (micros / 1000000) % 60, micros % 1000000);
    snprintf(session, sizeof session, "s-%lld", n);
    snprintf(client, sizeof client, "127.0.0.1:%lld", 40000 + n % 20000);
    snprintf(principal, sizeof principal, "user%lld@CORP", n);
    snprintf(target, sizeof target, "app%lld.corp.example:443", n % 7);
    snprintf(resolved, sizeof resolved, "10.0.%lld.1:443", n % 250);
    int deny = n % 5 == 0, named = n % 3 != 0, tls = n % 4 == 0;
    sqlite3_stmt *s = b->insert;
    sqlite3_bind_text(s, 1, ts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, n % 2 == 0 ? "tunnel-open" : "tunnel-close", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, session, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, client, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, "main", -1, SQLITE_STATIC);
    if (named) {
        sqlite3_bind_text(s, 6, principal, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 7, "basic", -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(s, 6);
        sqlite3_bind_null(s, 7);
    }
    sqlite3_bind_text(s, 8, target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 9, resolved, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 10, "server .corp.example:443", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 11, deny ? "deny" : "allow", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 12, deny ? "not-registered" : "allowed", -1, SQLITE_STATIC);
    if (deny) sqlite3_bind_int(s, 13, 403); else sqlite3_bind_null(s, 13);
    sqlite3_bind_int64(s, 14, n * 10);
    sqlite3_bind_int64(s, 15, n * 100);
    if (n % 2 == 0) sqlite3_bind_int64(s, 16, n); else sqlite3_bind_null(s, 16);
    if (tls) {
        sqlite3_bind_text(s, 17, "TLSv1.3", -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 18, "TLS_AES_256_GCM_SHA384", -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(s, 17);
        sqlite3_bind_null(s, 18);
    }
    sqlite3_bind_int(s, 19, n % 11 == 0);
    sqlite3_bind_text(s, 20, hash_hex, 64, SQLITE_STATIC);
    sqlite3_bind_text(s, 21, hash_hex, 64, SQLITE_STATIC);
    return step_and_reset(s);
}

int auditbench_baseline_insert(auditbench_baseline *b, long long first, int count) {
    int rc = step_and_reset(b->begin);
    if (rc != SQLITE_OK) return rc;
    for (long long n = first; n < first + count; n++) {
        rc = insert_one(b, n);
        if (rc != SQLITE_OK) {
            sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
    }
    return step_and_reset(b->commit);
}

void auditbench_baseline_close(auditbench_baseline *b) {
    if (!b) return;
    sqlite3_finalize(b->begin);
    sqlite3_finalize(b->commit);
    sqlite3_finalize(b->insert);
    sqlite3_close_v2(b->db);
    free(b);
}
