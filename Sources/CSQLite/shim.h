#include <sqlite3.h>

/// sqlite3_config is variadic, which Swift cannot call. SQLite's memory statistics take a
/// process-wide mutex around every allocation it makes; dynrelay never reads them, and the
/// audit writer allocates for every row. Valid only before SQLite initializes.
static inline int crelay_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
