import Glibc

extension TestKDC {
    /// Points this process's own krb5 library at this realm for `body` (`KRB5_CONFIG` and
    /// `KRB5RCACHEDIR`), then puts the variables back. They are the process's: tests of
    /// different suites run at once (the server tests beside the serialized integration run),
    /// so one realm at a time holds them, and the others wait their turn.
    public func withProcessRealm<T>(_ body: () async throws -> T) async rethrows -> T {
        await ProcessRealmLock.shared.acquire()
        let names = ["KRB5_CONFIG", "KRB5RCACHEDIR"]
        let saved = names.map { name in (name, getenv(name).map { String(cString: $0) }) }
        setenv("KRB5_CONFIG", krb5ConfigPath, 1)
        setenv("KRB5RCACHEDIR", directory, 1)
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
            ProcessRealmLock.shared.release()
        }
        return try await body()
    }
}

/// Who holds the process's krb5 variables, and who waits for them, in arrival order.
private actor ProcessRealmLock {
    static let shared = ProcessRealmLock()
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    nonisolated func release() {
        Task { await self.handOn() }
    }

    /// The next waiter gets the variables, or nobody holds them.
    private func handOn() {
        if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
    }
}
