import FuzzSupport
import RelayCore

/// The SPNEGO reader on a Negotiate token: the mechanism token it finds lies inside the
/// token, and is found again when wrapped afresh in either DER framing a client sends; an
/// NTLM message carried as the mechanism token names the same account however it is
/// wrapped. (An NTLM signature elsewhere in the token makes it `malformed`, which a fresh
/// wrapping of the mechanism token alone rightly does not repeat.)
@main
enum FuzzSPNEGO {
    static func main() {
        FuzzDriver.run(fuzzSPNEGO)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzSPNEGO(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let token = Array(UnsafeBufferPointer(start: data, count: size))
    let claim = NTLMAuthenticateMessage.claim(inNegotiateToken: token)
    guard let inner = SPNEGOToken.mechanismToken(in: token) else { return 0 }
    invariant(inner.startIndex >= 0 && inner.endIndex <= token.count, "mechanism token \(inner.indices) of \(token.count)")
    let mechanism = Array(inner)
    for wrapped in [DER.negTokenResp(mechanism), DER.negTokenInit(mechanism)] {
        let found = SPNEGOToken.mechanismToken(in: wrapped).map(Array.init)
        invariant(found == mechanism, "rewrapped mechanism token read as \(String(describing: found))")
        if mechanism.starts(with: DER.ntlmSignature) {
            let again = NTLMAuthenticateMessage.claim(inNegotiateToken: wrapped)
            invariant(again == claim, "rewrapped token claims \(again), the original \(claim)")
        }
    }
    return 0
}

/// The two SPNEGO framings, in DER.
enum DER {
    /// OID 1.3.6.1.5.5.2.
    static let spnego: [UInt8] = [0x2B, 0x06, 0x01, 0x05, 0x05, 0x02]
    static let ntlmSignature = Array("NTLMSSP".utf8) + [0]

    /// `A1 { 30 { A2 { 04 mechToken } } }`: every message after the first.
    static func negTokenResp(_ mechanism: [UInt8]) -> [UInt8] {
        element(0xA1, element(0x30, element(0xA2, element(0x04, mechanism))))
    }

    /// `60 { 06 spnego, A0 { 30 { A2 { 04 mechToken } } } }`: the first message.
    static func negTokenInit(_ mechanism: [UInt8]) -> [UInt8] {
        element(0x60, element(0x06, spnego) + element(0xA0, element(0x30, element(0xA2, element(0x04, mechanism)))))
    }

    static func element(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        [tag] + length(value.count) + value
    }

    /// Short form below 128, otherwise the fewest big-endian bytes.
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
