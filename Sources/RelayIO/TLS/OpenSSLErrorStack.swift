import COpenSSL

/// The entries of this thread's OpenSSL error queue, oldest first, drained as they are read:
/// a failure keeps the whole stack (the first entry is often the cause, the last the step
/// that gave up), and the next call starts from an empty queue.
struct OpenSSLErrorStack: Sendable, Equatable {
    /// One queued error: its packed code (for the library and reason) and its text.
    struct Entry: Sendable, Equatable {
        let code: UInt
        let text: String

        var library: Int32 { crelay_ERR_GET_LIB(code) }
        var reason: Int32 { crelay_ERR_GET_REASON(code) }
    }

    let entries: [Entry]

    /// Drains the queue.
    static func drain() -> OpenSSLErrorStack {
        var entries: [Entry] = []
        // Bounded: the queue holds at most ERR_NUM_ERRORS (16) entries.
        for _ in 0..<64 {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            entries.append(Entry(code: code, text: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                                                          as: UTF8.self)))
        }
        return OpenSSLErrorStack(entries: entries)
    }

    /// True when an SSL-library entry has `reason` (an `SSL_R_*` code).
    func hasSSLReason(_ reason: Int32) -> Bool {
        entries.contains { $0.library == ERR_LIB_SSL && $0.reason == reason }
    }

    /// The entries' texts joined, or nil when the queue was empty.
    var text: String? {
        entries.isEmpty ? nil : entries.map(\.text).joined(separator: "; ")
    }
}
