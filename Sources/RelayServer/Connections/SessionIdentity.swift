import Synchronization

/// Who and where a connection is, stamped on every audit row and log line of it.
struct SessionIdentity: Sendable {
    /// 16 hex digits, unique per accepted connection.
    let session: String
    let client: String
    let listener: String
    /// Where an accepted connection came from, counted under `max-connections-per-source`
    /// until it closes; nil for rows about no single connection.
    var source: ClientSource? = nil
    /// The loop an accepted connection lives on, counted in `LoopLoads` until it closes;
    /// nil for rows about no single connection.
    var loop: Int? = nil
    /// The TLS version and cipher the client spoke to an HTTPS listener ("TLSv1.3",
    /// "TLS_AES_256_GCM_SHA384"); nil on a plain listener. Every row of the connection
    /// carries them.
    var clientTLSVersion: String? = nil
    var clientTLSCipher: String? = nil
}

/// Session ids: a random per-process key run through a bijective mixer with a counter, so
/// ids are unique within a process, unrelated across restarts, and cost no system call.
final class SessionIDGenerator: Sendable {
    private let key: UInt64
    private let counter = Atomic<UInt64>(0)

    init() {
        var generator = SystemRandomNumberGenerator()
        key = generator.next()
    }

    func next() -> String {
        let count = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        // SplitMix64's finaliser is a bijection on UInt64: distinct counts, distinct ids.
        var z = count &+ key
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        // Sixteen hex digits written in place: `String(_:radix:)` and padding cost three
        // allocations and a generic-metadata lookup on every accepted connection.
        return String(unsafeUninitializedCapacity: 16) { out in
            for index in 0..<16 {
                let nibble = UInt8(truncatingIfNeeded: z >> UInt64(60 - 4 * index)) & 0xF
                out[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return 16
        }
    }
}
