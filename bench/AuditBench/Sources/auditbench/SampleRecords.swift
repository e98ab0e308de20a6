import RelayCore

/// Row `n` of every measurement: the values `CSQLiteBaseline` binds for the same `n`, so
/// both engines store rows of one shape (a mix of open and close rows, some refusals, some
/// anonymous, some with TLS).
enum SampleRecords {
    static func record(_ n: Int) -> AuditRecord {
        let deny = n % 5 == 0
        let named = n % 3 != 0
        let tls = n % 4 == 0
        return AuditRecord(
            event: n % 2 == 0 ? .tunnelOpen : .tunnelClose,
            timestampMicros: 1_796_062_904_000_000 + Int64(n),
            session: "s-\(n)",
            client: "127.0.0.1:\(40000 + n % 20000)",
            listener: "main",
            principal: named ? "user\(n)@CORP" : nil,
            scheme: named ? "basic" : nil,
            target: "app\(n % 7).corp.example:443",
            resolved: "10.0.\(n % 250).1:443",
            rule: "server .corp.example:443",
            decision: deny ? .deny : .allow,
            reason: deny ? "not-registered" : "allowed",
            status: deny ? 403 : nil,
            bytesUp: Int64(n * 10),
            bytesDown: Int64(n * 100),
            durationMs: n % 2 == 0 ? Int64(n) : nil,
            tlsVersion: tls ? "TLSv1.3" : nil,
            tlsCipher: tls ? "TLS_AES_256_GCM_SHA384" : nil,
            simulated: n % 11 == 0
        )
    }
}
