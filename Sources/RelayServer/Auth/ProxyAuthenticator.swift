import RelayCore
import RelayIO
import Synchronization

/// Proxy authentication for one configuration: the schemes a `407` offers, their
/// credential sources, the lockout table and the verified-login cache. Shared by every
/// loop; a reload builds a new one and connections keep the one they started with.
/// Per-connection handshake state lives in `ConnectionAuthenticator`.
final class ProxyAuthenticator: Sendable {
    let config: AuthConfig
    /// `config.schemes`, strongest first, worked out once: every request looks its scheme up.
    let schemes: [AuthConfig.Scheme]
    let store: (any CredentialStore)?
    let digest: DigestAuthenticator?
    let ntlm: NTLMHandshake.Configuration?
    let helpers: AuthHelpers
    /// The keytab credential Negotiate accepts with, built once per configuration.
    let negotiate: GSSAcceptorCredential?
    /// Password KDFs and GSS-API calls: CPU-heavy or blocking, never on a loop.
    let workers = WorkerPool(label: "dynrelay.auth", threads: 2, maxWaiting: 4096)
    let cache: VerifiedCredentialCache
    /// Basic password checks running now, by credentials: the answer is nil when the
    /// password is right, else the refusal reason.
    let basicChecks = RequestsInFlight<CredentialTag, ReasonCode?>()
    /// Digest HA1 lookups a helper is answering now, by user and realm; nil when the
    /// lookup was refused for too many attempts.
    let digestLookups = RequestsInFlight<DigestLookupKey, HelperDigestAnswer?>()
    /// Monotonic nanoseconds for the Basic proofs' lifetimes (a test steps its own).
    let clock: @Sendable () -> UInt64
    private let lockout: Mutex<LockoutTracker>
    /// Copies of the tracker's `latestLockedUntil` and `failingPairs`, written under its lock:
    /// while nobody is locked out and no pair is failing, the checks every login makes skip
    /// the lock that both loops would otherwise take three times per request.
    private let latestLockedUntil = Atomic<UInt64>(0)
    private let failingPairs = Atomic<Int>(0)

    /// `digestKey` derives Digest's `opaque`; deriving it from a persistent secret keeps that
    /// value the same across reloads and restarts.
    init(config: AuthConfig, store: (any CredentialStore)?, digestKey: [UInt8], helpers: AuthHelpers,
         negotiate: GSSAcceptorCredential?, clock: @escaping @Sendable () -> UInt64 = { monotonicNanos() }) {
        self.clock = clock
        self.config = config
        schemes = config.schemes
        self.store = store
        self.helpers = helpers
        self.negotiate = negotiate
        digest = config.digest.map {
            DigestAuthenticator(configuration: .init(realm: $0.realm, serverKey: digestKey, algorithms: $0.algorithms,
                                                     nonceLifetime: UInt64($0.nonceLifetime.components.seconds),
                                                     offerUserhash: store != nil && config.helper(for: .digest) == nil))
        }
        ntlm = config.ntlm.map { NTLMHandshake.Configuration(domain: $0.domain, computerName: "DYNRELAY") }
        cache = VerifiedCredentialCache(ttl: config.cacheTTL.monotonicNanos)
        let lockoutConfig = config.lockout
        lockout = Mutex(LockoutTracker(policy: .init(
            principalFailures: lockoutConfig.principalFailures, sourceFailures: lockoutConfig.sourceFailures,
            window: UInt64(lockoutConfig.window.components.seconds),
            duration: UInt64(lockoutConfig.duration.components.seconds))))
    }

    /// One `Proxy-Authenticate` value per configured scheme, strongest first.
    func challenges(stale: Bool = false) -> [String] {
        var result: [String] = []
        for scheme in schemes {
            switch scheme {
            case .negotiate: result.append("Negotiate")
            case .ntlm: result.append("NTLM")
            case .digest:
                if let digest {
                    result += digest.challenges(now: Self.nonceClock(), stale: stale).map(\.headerValue)
                }
            case .basic:
                result.append("Basic realm=\"\(config.basic?.realm ?? AuthConfig.defaultRealm)\", charset=\"UTF-8\"")
            }
        }
        return result
    }

    func isLocked(principal: String?, source: String) -> Bool {
        let now = Self.unixTime()
        // A lockout recorded on another loop this very instant may be missed, exactly as if
        // this check had run just before it.
        guard now < latestLockedUntil.load(ordering: .acquiring) else { return false }
        return lockout.withLock { $0.isLocked(principal: principal, source: source, now: now) }
    }

    func recordFailure(principal: String?, source: String) {
        let now = Self.unixTime()
        lockout.withLock {
            _ = $0.recordFailure(principal: principal, source: source, now: now)
            latestLockedUntil.store($0.latestLockedUntil, ordering: .releasing)
            failingPairs.store($0.failingPairs, ordering: .releasing)
        }
    }

    /// See `LockoutTracker.beginCheck`.
    func beginCheck(principal: String, source: String) -> Bool {
        let now = Self.unixTime()
        return lockout.withLock { $0.beginCheck(principal: principal, source: source, now: now) }
    }

    func endCheck(principal: String, source: String) {
        lockout.withLock { $0.endCheck(principal: principal, source: source) }
    }

    func recordSuccess(principal: String, source: String) {
        guard failingPairs.load(ordering: .acquiring) > 0 else { return }
        lockout.withLock {
            $0.recordSuccess(principal: principal, source: source)
            failingPairs.store($0.failingPairs, ordering: .releasing)
        }
    }

    deinit {
        helpers.close()
    }

    /// Unix seconds, from the clock the audit trail stamps rows with.
    /// Forgets expired Digest nonces and the HA1s proven with them.
    func sweep() {
        digest?.sweep(now: Self.nonceClock())
    }

    static func unixTime() -> UInt64 {
        UInt64(max(0, AuditTimestamp.nowMicros() / 1_000_000))
    }

    /// Seconds on the monotonic clock, for Digest nonce ages: a nonce never leaves this
    /// process's table, so a step of the wall clock must neither stretch nor cut its life.
    static func nonceClock() -> UInt64 {
        monotonicNanos() / 1_000_000_000
    }
}

/// What a Digest helper's HA1 answer depends on.
struct DigestLookupKey: Hashable, Sendable {
    var user: String
    var realm: String
}
