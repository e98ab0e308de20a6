/// NTLM `NegotiateFlags` (MS-NLMP §2.2.2.5), the bits this relay reads or sets.
public struct NTLMNegotiateFlags: OptionSet, Sendable, Hashable {
    /// The raw 32-bit field.
    public let rawValue: UInt32
    /// Wraps the raw field.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Strings in UTF-16LE.
    public static let unicode = NTLMNegotiateFlags(rawValue: 0x0000_0001)
    /// Strings in the OEM code page (ASCII is all this relay accepts).
    public static let oem = NTLMNegotiateFlags(rawValue: 0x0000_0002)
    /// The client asks for the server's target name.
    public static let requestTarget = NTLMNegotiateFlags(rawValue: 0x0000_0004)
    /// Message signing (session security; not used for HTTP proxy auth).
    public static let sign = NTLMNegotiateFlags(rawValue: 0x0000_0010)
    /// Message sealing (session security; not used for HTTP proxy auth).
    public static let seal = NTLMNegotiateFlags(rawValue: 0x0000_0020)
    /// LAN Manager session key (refused: LM).
    public static let lmKey = NTLMNegotiateFlags(rawValue: 0x0000_0080)
    /// NTLM authentication.
    public static let ntlm = NTLMNegotiateFlags(rawValue: 0x0000_0200)
    /// Anonymous authentication.
    public static let anonymous = NTLMNegotiateFlags(rawValue: 0x0000_0800)
    /// Dummy signatures; echoed when asked.
    public static let alwaysSign = NTLMNegotiateFlags(rawValue: 0x0000_8000)
    /// The target name is a domain name.
    public static let targetTypeDomain = NTLMNegotiateFlags(rawValue: 0x0001_0000)
    /// NTLMv1 with extended session security: the NTLM2 session response.
    public static let extendedSessionSecurity = NTLMNegotiateFlags(rawValue: 0x0008_0000)
    /// The CHALLENGE carries target info (AV pairs).
    public static let targetInfo = NTLMNegotiateFlags(rawValue: 0x0080_0000)
    /// A Version field is present.
    public static let version = NTLMNegotiateFlags(rawValue: 0x0200_0000)
    /// 128-bit session keys.
    public static let bits128 = NTLMNegotiateFlags(rawValue: 0x2000_0000)
    /// Key exchange (session security; not used for HTTP proxy auth).
    public static let keyExchange = NTLMNegotiateFlags(rawValue: 0x4000_0000)
    /// 56-bit session keys.
    public static let bits56 = NTLMNegotiateFlags(rawValue: 0x8000_0000)
}
