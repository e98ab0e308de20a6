import FuzzSupport
import RelayCore

/// Every parser a `Proxy-Authorization` value meets before a scheme's state machine: the
/// header grammar, the auth-param list, base64, Basic and Digest credentials. Whatever
/// parses reads back from its own canonical spelling; Digest credentials are then answered
/// by an independent RFC 7616 computation, which must verify once and be refused as a replay.
@main
enum FuzzAuthorization {
    static func main() {
        FuzzDriver.run(fuzzAuthorization)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzAuthorization(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The list parser alone, on the raw (possibly non-UTF-8) bytes.
    if let list = try? AuthParameters(parsing: bytes[...], maxCount: 64) {
        AuthParamWire.checkRoundTrip(list)
    }
    guard let authorization = try? ProxyAuthorization(parsing: String(decoding: bytes, as: UTF8.self)) else { return 0 }
    switch authorization.credentials {
    case .none:
        break
    case .token68(let token):
        if let decoded = try? AuthCrypto.base64Decode(token, maxDecodedCount: ProxyAuthorization.defaultMaxLength) {
            // Only canonical base64 decodes, so it re-encodes to the very same text.
            invariant(AuthCrypto.base64Encode(decoded) == token, "\(token) is not canonical base64")
        }
        if let basic = try? BasicCredentials(authorization) {
            let again = try? BasicCredentials(token68: AuthCrypto.base64Encode(Array("\(basic.user):\(basic.password)".utf8)))
            invariant(again == basic, "Basic credentials for \(basic.user) do not read back")
        }
    case .parameters(let list):
        AuthParamWire.checkRoundTrip(list)
        if authorization.hasScheme("Digest"), let credentials = try? DigestCredentials(authorization) {
            DigestAnswer.check(credentials)
        }
    }
    return 0
}

/// Auth-param lists in canonical spelling: `name=token`, or `name="quoted"` with `"` and `\` escaped.
enum AuthParamWire {
    typealias Field = (name: String, value: String, quoted: Bool)

    static func spell(_ fields: [Field]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, field) in fields.enumerated() {
            if index > 0 { out += Array(", ".utf8) }
            out += Array(field.name.utf8) + [UInt8(ascii: "=")]
            if field.quoted {
                out.append(UInt8(ascii: "\""))
                for byte in field.value.utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                }
                out.append(UInt8(ascii: "\""))
            } else {
                out += Array(field.value.utf8)
            }
        }
        return out
    }

    static func checkRoundTrip(_ list: AuthParameters) {
        let spelled = spell(list.parameters.map { ($0.name, $0.value, $0.wasQuoted) })
        let again = try? AuthParameters(parsing: spelled[...], maxCount: 64)
        invariant(again == list, "\(String(decoding: spelled, as: UTF8.self)) reads back as \(String(describing: again?.parameters))")
    }
}
