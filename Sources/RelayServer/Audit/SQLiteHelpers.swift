import CSQLite

/// Small helpers over the SQLite C API that the importer leaves awkward.
enum SQLite {
    /// Process-wide settings, applied before the first connection opens (SQLite accepts
    /// them only before it initializes): see `crelay_sqlite_disable_memory_statistics`.
    static func configureProcess() {
        _ = processConfigured
    }

    private static let processConfigured: Bool = crelay_sqlite_disable_memory_statistics() == SQLITE_OK

    /// `SQLITE_TRANSIENT`: the importer drops the macro (it is a cast of -1 to a function
    /// pointer); SQLite copies the bytes before `sqlite3_bind_*` returns.
    static let transient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

    /// Binds the exact UTF-8 bytes (embedded NULs included) rather than a C string, copied.
    static func bindText(_ stmt: OpaquePointer, _ index: Int32, _ value: String?) -> Int32 {
        guard var value else { return sqlite3_bind_null(stmt, index) }
        return value.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(stmt, index, "", 0, transient)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(stmt, index, $0, Int32(bytes.count), transient)
            }
        }
    }
    static func message(_ db: OpaquePointer?) -> String {
        guard let db, let text = sqlite3_errmsg(db) else { return "out of memory" }
        return String(cString: text)
    }

    static func errorCode(_ db: OpaquePointer?) -> Int32 {
        guard let db else { return SQLITE_NOMEM }
        return sqlite3_extended_errcode(db)
    }

    /// Binds `bytes[range]` (nil binds NULL) without a copy: SQLITE_STATIC, so the bytes
    /// must stay valid and unchanged until the statement is stepped and reset, or rebound.
    static func bindStaticText(_ stmt: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer,
                               _ range: Range<Int>?) -> Int32 {
        guard let range else { return sqlite3_bind_null(stmt, index) }
        precondition(range.upperBound <= bytes.count)
        let start = bytes.baseAddress!.advanced(by: range.lowerBound).assumingMemoryBound(to: CChar.self)
        return sqlite3_bind_text(stmt, index, start, Int32(range.count), nil)
    }

    static func bindInteger(_ stmt: OpaquePointer, _ index: Int32, _ value: Int64?) -> Int32 {
        guard let value else { return sqlite3_bind_null(stmt, index) }
        return sqlite3_bind_int64(stmt, index, value)
    }

    /// The column's bytes, or nil for NULL; other storage classes are reported as `.wrongType`.
    enum TextColumn {
        case null
        case text([UInt8])
        case wrongType(Int32)
    }

    static func text(_ stmt: OpaquePointer, _ index: Int32) -> TextColumn {
        switch sqlite3_column_type(stmt, index) {
        case SQLITE_NULL:
            return .null
        case SQLITE_TEXT:
            // Text first, then its length: the documented order that avoids a conversion.
            let base = sqlite3_column_text(stmt, index)
            let count = Int(sqlite3_column_bytes(stmt, index))
            guard count > 0, let base else { return .text([]) }
            return .text(Array(UnsafeBufferPointer(start: base, count: count)))
        case let other:
            return .wrongType(other)
        }
    }
}
