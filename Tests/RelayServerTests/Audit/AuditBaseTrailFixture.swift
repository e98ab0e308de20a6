/// A trail written by `dynrelay serve` of a build whose rows had no TLS extension columns
/// (the table below, 22 columns), dumped with `sqlite3 audit.db .dump`: a plain request, a
/// CONNECT tunnel and two refusals through a relay on loopback, then a clean stop. Its
/// hashes were computed by that build, so it verifying here proves the canonical form of
/// rows without the extension is unchanged.
enum AuditBaseTrailFixture {
    static let rowCount = 6

    static let hashes = [
        "77129f9203a459e16234124406428aca4b1c5d3edf9df1cffe1f6d0359b38977",
        "3eba9acaafd05323dc21beac79f8a2a23120015118f709f651299e529bd3282b",
        "a0d89858bfa2c73ae0f2149624ef6e32edbb25d8cda37abc83282e06c2950c60",
        "91c013a18188d41ee277b1cfa7d2d7a6b1b3612e15915b40e680a95dda9b013c",
        "a11ef0e72fd6e0febbe34e6f2937ee18d50ba47997b44440f3ac7a0f7714ab71",
        "43f962b7ab3a98b9ec7439088b4de6aacd03dd94305218ba6f9154a99d63f925",
    ]

    /// Recreates the trail at `path` (which must not exist) in WAL mode, as the daemon keeps it.
    static func write(to path: String) throws {
        try SQL.exec(path, "PRAGMA journal_mode=WAL;\n" + sql, create: true)
    }

    static let sql = """
        PRAGMA foreign_keys=OFF;
        BEGIN TRANSACTION;
        CREATE TABLE audit_events (
            seq INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            event TEXT NOT NULL,
            session TEXT NOT NULL,
            client TEXT NOT NULL,
            listener TEXT NOT NULL,
            principal TEXT,
            scheme TEXT,
            target TEXT,
            resolved TEXT,
            rule TEXT,
            decision TEXT NOT NULL,
            reason TEXT NOT NULL,
            status INTEGER,
            bytes_up INTEGER,
            bytes_down INTEGER,
            duration_ms INTEGER,
            tls_version TEXT,
            tls_cipher TEXT,
            simulated INTEGER NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        INSERT INTO audit_events VALUES(1,'2026-12-02T03:49:42.666318Z','request-open','f2c82184a334353f','127.0.0.1:54074','127.0.0.1:33259',NULL,NULL,'127.0.0.1:38221','127.0.0.1:38221','/tmp/auditfix/dynrelay.conf:4','allow','allowed',NULL,0,0,NULL,NULL,NULL,0,'0000000000000000000000000000000000000000000000000000000000000000','77129f9203a459e16234124406428aca4b1c5d3edf9df1cffe1f6d0359b38977');
        INSERT INTO audit_events VALUES(2,'2026-12-02T03:49:42.744838Z','request-close','f2c82184a334353f','127.0.0.1:54074','127.0.0.1:33259',NULL,NULL,'127.0.0.1:38221','127.0.0.1:38221','/tmp/auditfix/dynrelay.conf:4','allow','completed',200,98,750,68,NULL,NULL,0,'77129f9203a459e16234124406428aca4b1c5d3edf9df1cffe1f6d0359b38977','3eba9acaafd05323dc21beac79f8a2a23120015118f709f651299e529bd3282b');
        INSERT INTO audit_events VALUES(3,'2026-12-02T03:49:42.937723Z','tunnel-open','09434d352a12c67c','127.0.0.1:54082','127.0.0.1:33259',NULL,NULL,'127.0.0.1:38221','127.0.0.1:38221','/tmp/auditfix/dynrelay.conf:4','allow','allowed',NULL,0,0,NULL,NULL,NULL,0,'3eba9acaafd05323dc21beac79f8a2a23120015118f709f651299e529bd3282b','a0d89858bfa2c73ae0f2149624ef6e32edbb25d8cda37abc83282e06c2950c60');
        INSERT INTO audit_events VALUES(4,'2026-12-02T03:49:43.001223Z','tunnel-close','09434d352a12c67c','127.0.0.1:54082','127.0.0.1:33259',NULL,NULL,'127.0.0.1:38221','127.0.0.1:38221','/tmp/auditfix/dynrelay.conf:4','allow','completed',NULL,79,731,63,NULL,NULL,0,'a0d89858bfa2c73ae0f2149624ef6e32edbb25d8cda37abc83282e06c2950c60','91c013a18188d41ee277b1cfa7d2d7a6b1b3612e15915b40e680a95dda9b013c');
        INSERT INTO audit_events VALUES(5,'2026-12-02T03:49:43.173717Z','refused','065b43ee9a628c5f','127.0.0.1:54098','127.0.0.1:33259',NULL,NULL,'example.invalid:80',NULL,NULL,'deny','not-registered',403,0,0,NULL,NULL,NULL,0,'91c013a18188d41ee277b1cfa7d2d7a6b1b3612e15915b40e680a95dda9b013c','a11ef0e72fd6e0febbe34e6f2937ee18d50ba47997b44440f3ac7a0f7714ab71');
        INSERT INTO audit_events VALUES(6,'2026-12-02T03:49:43.355597Z','refused','8853d0c22cdba8af','127.0.0.1:54112','127.0.0.1:33259',NULL,NULL,'127.0.0.1:1',NULL,NULL,'deny','not-registered',403,0,0,NULL,NULL,NULL,0,'a11ef0e72fd6e0febbe34e6f2937ee18d50ba47997b44440f3ac7a0f7714ab71','43f962b7ab3a98b9ec7439088b4de6aacd03dd94305218ba6f9154a99d63f925');
        CREATE TABLE audit_meta (
            name TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        );
        INSERT INTO audit_meta VALUES('closed_through',6);
        COMMIT;
        """
}
