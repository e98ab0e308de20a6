#ifndef CSQLITEBASELINE_H
#define CSQLITEBASELINE_H

/// Plain SQLite inserts of rows shaped like audit rows: the floor the audit trail is compared
/// with. No hash chain, no queue, no callbacks; one prepared INSERT reused for every row.
typedef struct auditbench_baseline auditbench_baseline;

/// Opens (creating) the database at `path` in WAL mode with `PRAGMA synchronous=FULL` when
/// `synchronous_full` is non-zero, NORMAL otherwise. NULL on failure, with the reason in
/// `error` (at most `error_size` bytes).
auditbench_baseline *auditbench_baseline_open(const char *path, int synchronous_full, char *error, int error_size);

/// Inserts rows `first` ..< `first + count` in one transaction (BEGIN IMMEDIATE ... COMMIT).
/// 0 on success, the SQLite result code otherwise.
int auditbench_baseline_insert(auditbench_baseline *baseline, long long first, int count);

void auditbench_baseline_close(auditbench_baseline *baseline);

#endif
