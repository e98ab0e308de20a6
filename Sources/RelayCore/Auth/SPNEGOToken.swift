/// Reads a SPNEGO message (RFC 4178) just far enough to find the mechanism token it
/// carries, so a relay that hands Negotiate tokens to a helper can see an NTLM AUTHENTICATE
/// inside one and count its failures against the account it names.
///
/// Two shapes reach a proxy: the first message, a NegTokenInit in the InitialContextToken
/// framing (`60 … 06 <spnego oid> A0 30 {[0] mechTypes, [1] reqFlags, [2] mechToken, …}`),
/// and every later one, a bare NegTokenResp (`A1 30 {[0] negState, [1] supportedMech,
/// [2] responseToken, [3] mechListMIC}`). The mechanism token is the OCTET STRING inside
/// field `[2]`.
///
/// Only DER is read: definite lengths of at most four bytes, each element wholly inside
/// its parent, nothing after the outermost one, each context field at most once. Anything
/// else is `nil`, which names nobody: the helper or GSS-API judges it.
public enum SPNEGOToken {
    /// The DER of OID 1.3.6.1.5.5.2, SPNEGO's mechanism.
    static let oid: [UInt8] = [0x2B, 0x06, 0x01, 0x05, 0x05, 0x02]

    /// The mechanism token inside `token`, or nil when it is not SPNEGO, carries none, or
    /// breaks the rules above.
    public static func mechanismToken(in token: [UInt8]) -> ArraySlice<UInt8>? {
        var reader = DERReader(token[...])
        guard let (tag, body) = reader.next(), reader.isAtEnd else { return nil }
        switch tag {
        case 0x60:
            var framing = DERReader(body)
            guard let (oidTag, mechanism) = framing.next(), oidTag == 0x06, mechanism.elementsEqual(oid),
                  let (choice, negTokenInit) = framing.next(), choice == 0xA0, framing.isAtEnd
            else { return nil }
            return field2(ofSequenceIn: negTokenInit)
        case 0xA1:
            return field2(ofSequenceIn: body)
        default:
            return nil
        }
    }

    /// The OCTET STRING in context field `[2]` of the SEQUENCE that makes up `wrapper`.
    private static func field2(ofSequenceIn wrapper: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var outer = DERReader(wrapper)
        guard let (sequenceTag, sequence) = outer.next(), sequenceTag == 0x30, outer.isAtEnd else { return nil }
        var fields = DERReader(sequence)
        var seen: UInt8 = 0
        var found: ArraySlice<UInt8>?
        while !fields.isAtEnd {
            // Context fields [0]…[3], constructed, in ascending order, each once.
            guard let (tag, value) = fields.next(), tag & 0xE0 == 0xA0 else { return nil }
            let number = tag & 0x1F
            guard number <= 3, seen < 1 << number else { return nil }
            seen |= 1 << number
            if number == 2 {
                var octets = DERReader(value)
                guard let (octetTag, bytes) = octets.next(), octetTag == 0x04, octets.isAtEnd else { return nil }
                found = bytes
            }
        }
        return found
    }
}

/// Reads DER elements (single-byte tags, definite lengths) one after another from a slice.
struct DERReader {
    private var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    var isAtEnd: Bool { rest.isEmpty }

    /// The next element's tag and value, or nil (the reader then stays put) when it is
    /// truncated, uses a multi-byte tag, an indefinite length, or a length over four bytes
    /// or with needless leading bytes.
    mutating func next() -> (tag: UInt8, value: ArraySlice<UInt8>)? {
        var index = rest.startIndex
        guard index < rest.endIndex else { return nil }
        let tag = rest[index]
        guard tag & 0x1F != 0x1F else { return nil }
        index += 1
        guard index < rest.endIndex else { return nil }
        let first = rest[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), rest.endIndex - index >= count, rest[index] != 0 else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(rest[index])
                index += 1
            }
            guard length >= 0x80 else { return nil }
        }
        guard rest.endIndex - index >= length else { return nil }
        let value = rest[index..<(index + length)]
        rest = rest[(index + length)...]
        return (tag, value)
    }
}
