import RelayCore
import RelayIO
import Synchronization

/// The daemon's read-only view of the user store, shared by every loop thread.
///
/// It holds an in-memory snapshot of the store with every secret still sealed, and opens
/// one per lookup. At most once per `checkInterval` a lookup stats the database file
/// (inode, size, mtime, SQLite's change counter); when that changed, the snapshot is
/// reread, so `dynrelay users add` takes effect without a reload. A missing file means no
/// users. The key is looked for on each check until found (the CLI may create it after the
/// daemon started) and never created here. Every lookup that cannot be answered with
/// certainty (unknown user, other realm, no key, a sealed value that does not open) answers
/// nil: authentication fails closed.
public final class UserDirectory: Sendable {
    /// One user as NTLM found it: the stored name (the principal to record, whatever case
    /// the client typed) and the NT hash.
    public struct NTLMAccount: Sendable, Equatable {
        /// The user name as stored.
        public let name: String
        /// `MD4(UTF16LE(password))`, 16 bytes.
        public let ntHash: [UInt8]

        /// An account with its stored name and NT hash.
        public init(name: String, ntHash: [UInt8]) {
            self.name = name
            self.ntHash = ntHash
        }
    }

    /// The outcome of checking a Basic password.
    public enum PasswordCheck: Sendable, Equatable {
        /// The password is right; `user` is the name as stored.
        case ok(user: String)
        /// Refused: `unknown-user` or `bad-password`.
        case failed(reason: AuthFailureReason)
    }

    private struct State {
        var snapshot = UserSnapshot.empty
        var box: SecretBox?
        var stamp: UserStoreStamp?
        var lastCheckNanos: UInt64 = 0
        var checking = false
        var problem: UserStoreError?
        /// Bumped whenever a new snapshot or key is installed.
        var generation: UInt64 = 0

        /// The file should be looked at again: the interval has passed and nobody is at it.
        func checkDue(now: UInt64, interval: UInt64) -> Bool {
            !checking && now &- lastCheckNanos >= interval
        }
    }

    /// The database file watched.
    public let storePath: String
    /// Where the key is looked for.
    public let keySource: UserStoreKeySource
    private let checkIntervalNanos: UInt64
    private let state = Mutex(State())

    /// Short: a reload runs on whichever loop thread noticed the change, and a held lock
    /// means a writer is mid-commit; the next check retries.
    static let busyTimeoutMillis: Int32 = 100
    /// What an unknown Basic user costs, so timing does not tell which names exist.
    private static let decoyVerifier = PasswordVerifier(password: "decoy", iterations: PasswordVerifier.defaultIterations)

    /// A directory over the store at `storePath` (usually `<state-dir>/users.db`), loaded
    /// once now. `checkInterval` is how stale the snapshot may get.
    public init(storePath: String, keySource: UserStoreKeySource, checkInterval: Duration = .seconds(1)) {
        self.storePath = storePath
        self.keySource = keySource
        checkIntervalNanos = checkInterval.monotonicNanos
        state.withLock { $0.checking = true }
        refresh()
    }

    // MARK: - Lookups

    /// Checks a Basic password against the stored PBKDF2 verifier; `user` must match the
    /// stored name exactly. Unknown users cost the same PBKDF2 work as known ones.
    public func verifyBasic(user: String, password: String) -> PasswordCheck {
        guard let verifier = basicVerifier(for: user) else {
            _ = Self.decoyVerifier.verify(password)
            return .failed(reason: .unknownUser)
        }
        return verifier.verify(password) ? .ok(user: user) : .failed(reason: .badPassword)
    }

    /// The stored PBKDF2 verifier of `user`, nil when unknown (or unreadable).
    public func basicVerifier(for user: String) -> PasswordVerifier? {
        current().snapshot.entry(named: user)?.verifier
    }

    /// The raw `H(user:realm:password)` for `algorithm`, opened from its sealed form; nil
    /// when the user is unknown, `realm` is not the realm stored for them, or the value is
    /// missing, sealed under another key, or tampered with. Fits
    /// `DigestAuthenticator.HA1Lookup`.
    public func digestHA1(user: String, realm: String, algorithm: DigestAlgorithm) -> [UInt8]? {
        let (snapshot, box, _) = current()
        guard let box, let entry = snapshot.entry(named: user), entry.digestRealm == realm else { return nil }
        let (sealed, column): ([UInt8]?, UserStoreSchema.SealedColumn) = switch algorithm {
        case .md5: (entry.ha1MD5, .ha1MD5)
        case .sha256: (entry.ha1SHA256, .ha1SHA256)
        }
        guard let sealed,
              let ha1 = box.open(sealed, associatedData: UserStoreSchema.associatedData(user: entry.name, column: column)),
              ha1.count == algorithm.digestLength
        else { return nil }
        return ha1
    }

    /// The user whose `H(user:realm)` is `userhash` (hex, either case), when their stored
    /// realm is `realm`. Fits `DigestAuthenticator.UserhashLookup`.
    public func userForUserhash(_ userhash: String, realm: String, algorithm: DigestAlgorithm) -> String? {
        let snapshot = current().snapshot
        guard let name = snapshot.name(forUserhash: userhash, algorithm: algorithm),
              snapshot.entry(named: name)?.digestRealm == realm
        else { return nil }
        return name
    }

    /// The account NTLM `user` names, compared case-insensitively as Windows does, with
    /// its opened NT hash; nil when unknown, ambiguous, without an NT hash, or when the
    /// sealed value does not open.
    public func ntlmAccount(user: String) -> NTLMAccount? {
        let (snapshot, box, _) = current()
        guard let box, let name = snapshot.name(forNTLMUser: user), let entry = snapshot.entry(named: name),
              let sealed = entry.ntHash,
              let hash = box.open(sealed, associatedData: UserStoreSchema.associatedData(user: name, column: .ntHash)),
              hash.count == 16
        else { return nil }
        return NTLMAccount(name: name, ntHash: hash)
    }

    /// `ntlmAccount(user:)`'s NT hash alone, for `NTLMVerifier.verify`'s lookup.
    public func ntHash(user: String) -> [UInt8]? {
        ntlmAccount(user: user)?.ntHash
    }

    // MARK: - State

    /// How many users the current snapshot holds.
    /// Moves whenever the users (or the key) change: caches of proven logins compare it.
    public var generation: UInt64 {
        // Every Basic and Digest request asks: read the number alone rather than copying the
        // snapshot and key out of the lock to throw them away.
        let now = monotonicNanos()
        let found = state.withLock { state -> UInt64? in
            state.checkDue(now: now, interval: checkIntervalNanos) ? nil : state.generation
        }
        return found ?? current().generation
    }

    public var userCount: Int {
        current().snapshot.entries.count
    }

    /// What went wrong on the last check (key file insecure or malformed, wrong key,
    /// unreadable database), for the daemon to log; nil when all is well.
    public var problem: UserStoreError? {
        _ = current()
        return state.withLock { $0.problem }
    }

    /// Checks the file now, whatever the interval (SIGHUP, tests).
    public func refreshNow() {
        let claimed = state.withLock { state -> Bool in
            guard !state.checking else { return false }
            state.checking = true
            return true
        }
        if claimed { refresh() }
    }

    /// The snapshot and key to answer from, after a check if one is due. Only the thread
    /// that claims the check does file work, outside the lock; the others answer from the
    /// snapshot they find.
    /// One lock acquisition when no check is due: every login asks, from both loops.
    private func current() -> (snapshot: UserSnapshot, box: SecretBox?, generation: UInt64) {
        let now = monotonicNanos()
        let (due, found) = state.withLock { state in
            let found = (state.snapshot, state.box, state.generation)
            guard state.checkDue(now: now, interval: checkIntervalNanos) else { return (false, found) }
            state.checking = true
            return (true, found)
        }
        guard due else { return found }
        refresh()
        return state.withLock { ($0.snapshot, $0.box, $0.generation) }
    }

    /// Runs with `checking` claimed by the caller; releases it.
    private func refresh() {
        let (oldStamp, oldBox) = state.withLock { ($0.stamp, $0.box) }
        var box = oldBox
        var keyProblem: UserStoreError?
        if box == nil {
            do throws(UserStoreError) {
                box = try keySource.load()
            } catch {
                keyProblem = error
            }
        }
        let stamp = UserStoreStamp.read(storePath)
        var snapshot: UserSnapshot?
        var loadProblem: UserStoreError?
        var keepOldStamp = false
        if stamp != oldStamp || (oldBox == nil && box != nil) {
            if stamp == nil {
                snapshot = .empty
            } else {
                do throws(UserStoreError) {
                    snapshot = try UserSnapshot.load(path: storePath, busyMillis: Self.busyTimeoutMillis)
                } catch where error.code == UserStoreError.Code.busy {
                    // A writer is mid-commit: keep answering from the old snapshot and look
                    // again at the next check.
                    keepOldStamp = true
                } catch {
                    // Unreadable or not a store: fail closed rather than keep users the
                    // file may no longer have.
                    snapshot = .empty
                    loadProblem = error
                }
            }
        }
        let now = monotonicNanos()
        state.withLock { state in
            if (state.box == nil) != (box == nil) { state.generation &+= 1 }
            state.box = box
            if let snapshot {
                state.snapshot = snapshot
                state.problem = loadProblem
                state.generation &+= 1
            }
            if !keepOldStamp { state.stamp = stamp }
            if let keyProblem {
                state.problem = keyProblem
            } else if state.problem?.code.hasPrefix("key-") == true {
                state.problem = nil
            }
            if let box, let check = state.snapshot.keyCheck,
               box.open(check, associatedData: UserStoreSchema.keyCheckAssociatedData) != UserStoreSchema.keyCheckPlaintext {
                state.problem = UserStoreError(code: UserStoreError.Code.keyMismatch,
                                               message: "\(storePath) was sealed with another key than the one found")
            }
            state.lastCheckNanos = now
            state.checking = false
        }
    }
}
