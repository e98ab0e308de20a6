import Glibc

/// Where a client's authentication answers get their randomness and time: OpenSSL's
/// CSPRNG and the system clock, unless a test fixes them to reproduce a specification's
/// vectors byte for byte.
public struct ClientAuthEntropy: Sendable {
    /// A Digest client nonce.
    public var cnonce: @Sendable () -> String
    /// An 8-byte NTLMv2 client challenge.
    public var ntlmClientChallenge: @Sendable () -> [UInt8]
    /// Now, as a Windows FILETIME (100 ns ticks since 1601), for an NTLMv2 blob whose
    /// server sent no timestamp.
    public var fileTime: @Sendable () -> UInt64

    /// Fixed sources, for tests.
    public init(cnonce: @escaping @Sendable () -> String,
                ntlmClientChallenge: @escaping @Sendable () -> [UInt8],
                fileTime: @escaping @Sendable () -> UInt64) {
        self.cnonce = cnonce
        self.ntlmClientChallenge = ntlmClientChallenge
        self.fileTime = fileTime
    }

    /// 128-bit random cnonces and client challenges, the real clock.
    public static let system = ClientAuthEntropy(
        cnonce: { AuthHex.encode(AuthCrypto.randomBytes(count: 16)) },
        ntlmClientChallenge: { AuthCrypto.randomBytes(count: 8) },
        fileTime: {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return NTLMChallengeMessage.fileTime(unixTime: UInt64(max(now.tv_sec, 0))) + UInt64(now.tv_nsec / 100)
        })
}
