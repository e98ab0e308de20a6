import RelayCore

/// Parsed heads written back verbatim (no rewriting): what the parser accepted must read
/// back as the same head, which pins down that it kept every byte it claimed to.
public enum HeadWire {
    /// `method SP target SP version CRLF`, each field as `name: value CRLF`, CRLF.
    public static func request(_ head: HTTPRequestHead) -> [UInt8] {
        var out = Array("\(head.method) \(head.target) \(head.version)\r\n".utf8)
        appendFields(head.headers, to: &out)
        return out
    }

    /// `version SP status [SP reason] CRLF`, the fields, CRLF.
    public static func response(_ head: HTTPResponseHead) -> [UInt8] {
        let statusText = String(head.status)
        var out = Array("\(head.version) \(statusText)".utf8)
        if !head.reason.isEmpty {
            out += Array(" \(head.reason)".utf8)
        }
        out += [0x0D, 0x0A]
        appendFields(head.headers, to: &out)
        return out
    }

    private static func appendFields(_ headers: HTTPHeaders, to out: inout [UInt8]) {
        for field in headers {
            out += Array(field.name.utf8)
            out += [UInt8(ascii: ":"), UInt8(ascii: " ")]
            field.appendValue(to: &out)
            out += [0x0D, 0x0A]
        }
        out += [0x0D, 0x0A]
    }
}
