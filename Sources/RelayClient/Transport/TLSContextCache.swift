import RelayIO
import Synchronization

/// One client `TLSContext` per distinct `ClientTLSOptions`, built on first use and kept:
/// OpenSSL 3 is slow to build a context, and the context holds the session cache that lets
/// a second connection to a server resume. A context allowing TLS below 1.2 runs at
/// security level 0, and only that context (`TLSProtocols.apply`).
final class TLSContextCache: Sendable {
    private let contexts = Mutex<[ClientTLSOptions: TLSContext]>([:])

    /// The context for `options`.
    func context(for options: ClientTLSOptions) throws(RelayClientError) -> TLSContext {
        if let found = contexts.withLock({ $0[options] }) { return found }
        let protocols = TLSProtocols(wire: options.versions.versions.map(\.wire))
        let built: TLSContext
        do throws(TLSSetupError) {
            built = try TLSContext.client(caFile: options.caFile, verify: options.verify, versions: protocols)
        } catch {
            throw RelayClientError(error)
        }
        // Built outside the lock (it takes milliseconds); the first one stored wins, so
        // every stream of these options shares one session cache.
        return contexts.withLock { contexts in
            if let raced = contexts[options] { return raced }
            contexts[options] = built
            return built
        }
    }
}
