import CSQLiteBaseline

/// The plain SQLite database of the `sqlite` engine.
final class Baseline {
    private let handle: OpaquePointer

    init(path: String, synchronousFull: Bool) throws {
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = auditbench_baseline_open(path, synchronousFull ? 1 : 0, &error, Int32(error.count)) else {
            throw BenchFailure(description: "sqlite: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.handle = handle
    }

    deinit {
        auditbench_baseline_close(handle)
    }

    /// Rows `first ..< first + count` in one transaction.
    func insert(first: Int, count: Int) throws {
        let rc = auditbench_baseline_insert(handle, Int64(first), Int32(count))
        guard rc == 0 else { throw BenchFailure(description: "sqlite: insert failed with result code \(rc)") }
    }
}
