import RelayCore

/// Records shared by the audit tests in this target; their golden bytes are spelled out
/// literally in the tests so a change to the encoding cannot slip through.
enum AuditFixtures {
    static let ts = "2026-11-30T18:21:44.123456Z"

    static let full = AuditRecord(
        event: .tunnelClose,
        timestampMicros: 1_796_062_904_123_456,
        session: "s-1",
        client: "127.0.0.1:5555",
        listener: "main",
        principal: "alice@CORP",
        scheme: "negotiate",
        target: "app1.corp.example:443",
        resolved: "10.0.0.5:443",
        rule: "app1.corp.example:443",
        decision: .allow,
        reason: "client-closed",
        status: 200,
        bytesUp: 1234,
        bytesDown: 56789,
        durationMs: 42,
        tlsVersion: "TLSv1.3",
        tlsCipher: "TLS_AES_128_GCM_SHA256",
        simulated: true
    )

    static let fullCanonical = "1:7,27:2026-11-30T18:21:44.123456Z,12:tunnel-close,3:s-1,14:127.0.0.1:5555,4:main,"
        + "10:alice@CORP,9:negotiate,21:app1.corp.example:443,12:10.0.0.5:443,21:app1.corp.example:443,"
        + "5:allow,13:client-closed,3:200,4:1234,5:56789,2:42,7:TLSv1.3,22:TLS_AES_128_GCM_SHA256,1:1,"

    static let minimal = AuditRecord(
        event: .refused, timestampMicros: 0, session: "", client: "c", listener: "l",
        decision: .deny, reason: "denied")
}
