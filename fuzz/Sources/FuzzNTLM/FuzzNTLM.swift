import FuzzSupport
import RelayCore

/// The NTLM message parsers and handshake on a decoded `NTLM` token: an AUTHENTICATE that
/// parses reads back from a canonical layout of its own fields; the handshake answers a
/// message the same whether it arrives decoded or as a header, and authenticates nobody
/// but the one account it knows, in either state.
@main
enum FuzzNTLM {
    static func main() {
        FuzzDriver.run(fuzzNTLM)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzNTLM(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let message = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? NTLMNegotiateMessage(parsing: message)
    let claim = NTLMAuthenticateMessage.claim(in: message)
    _ = NTLMAuthenticateMessage.claim(inNegotiateToken: message)
    if let authenticate = try? NTLMAuthenticateMessage(parsing: message) {
        invariant(claim == .user(authenticate.user.isEmpty ? nil : authenticate.user), "claim \(claim) for \(authenticate.user)")
        let canonical = NTLMLayout.authenticate(authenticate)
        let again = try? NTLMNegotiateMessage(parsing: canonical)
        invariant(again == nil, "an AUTHENTICATE read as a NEGOTIATE")
        let reread = try? NTLMAuthenticateMessage(parsing: canonical)
        invariant(reread == authenticate, "canonical layout reads back as \(String(describing: reread))")
    }

    for afterNegotiate in [false, true] {
        var decoded = NTLMLayout.handshake()
        var header = NTLMLayout.handshake()
        if afterNegotiate {
            _ = decoded.receive(message: NTLMLayout.negotiate, unixTime: 0, ntHash: NTLMLayout.ntHash)
            _ = header.receive(message: NTLMLayout.negotiate, unixTime: 0, ntHash: NTLMLayout.ntHash)
        }
        let action = decoded.receive(message: message, unixTime: 0, ntHash: NTLMLayout.ntHash)
        if case .authenticated(let user, _) = action {
            invariant(afterNegotiate && user.uppercased() == NTLMLayout.user.uppercased(), "authenticated \(user)")
        }
        if !message.isEmpty, message.count <= NTLMAuthenticateMessage.maxLength,
           let authorization = try? ProxyAuthorization(parsing: "NTLM " + AuthCrypto.base64Encode(message)) {
            let viaHeader = header.receive(authorization, unixTime: 0, ntHash: NTLMLayout.ntHash)
            invariant(viaHeader == action, "as a header: \(viaHeader), decoded: \(action)")
        }
    }
    return 0
}
