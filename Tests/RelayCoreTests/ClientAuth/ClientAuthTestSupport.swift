@testable import RelayCore

/// Fixed entropy and credentials for client-side authentication tests.
enum ClientAuthFixtures {
    static let rfcCnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
    static let mufasa = ClientCredentials(user: "Mufasa", password: "Circle of Life")

    /// The RFC 7616 cnonce, the MS-NLMP client challenge, and FILETIME 0.
    static let fixed = ClientAuthEntropy(cnonce: { rfcCnonce },
                                         ntlmClientChallenge: { [UInt8](repeating: 0xAA, count: 8) },
                                         fileTime: { 0 })

    static func session(_ credentials: ClientCredentials = mufasa, peer: ClientAuthSession.Peer = .server,
                        entropy: ClientAuthEntropy = fixed) -> ClientAuthSession {
        ClientAuthSession(credentials: credentials, host: "proxy.example.test", peer: peer, entropy: entropy)
    }
}
