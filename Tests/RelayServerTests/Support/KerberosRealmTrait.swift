import KerberosTestSupport
import Testing

/// Runs a whole suite inside one `TestKDC` (started once, about a second, stopped after
/// the suite's last test), reachable from each test as `KerberosRealmTrait.current`.
///
/// It also points this test process's own krb5 library at the realm (`KRB5_CONFIG`, and
/// `KRB5RCACHEDIR` so a default replay cache lands in the realm's directory rather than
/// /var/tmp): the in-process initiator has to find the KDC. That is process-global:
/// `TestKDC.withProcessRealm` holds it for the suite, and other realms wait.
struct KerberosRealmTrait: SuiteTrait, TestScoping {
    @TaskLocal static var current: TestKDC?

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let kdc = try TestKDC()
        defer { kdc.stop() }
        try await kdc.withProcessRealm { try await KerberosRealmTrait.$current.withValue(kdc) { try await function() } }
    }

    /// The suite's realm; fails the test if the suite forgot the trait.
    static func realm() throws -> TestKDC {
        try #require(current, "suite lacks @Suite(.kerberosRealm)")
    }
}

extension Trait where Self == KerberosRealmTrait {
    /// One throwaway MIT KDC for the whole suite.
    static var kerberosRealm: Self { KerberosRealmTrait() }
}
