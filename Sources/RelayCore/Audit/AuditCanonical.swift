/// The byte string each audit row's hash covers.
///
/// Every column except `prev_hash`/`hash`, in table order (seq, ts, event, session, client,
/// listener, principal, scheme, target, resolved, rule, decision, reason, status, bytes_up,
/// bytes_down, duration_ms, tls_version, tls_cipher, simulated), each as
/// `<decimal byte length>:<UTF-8 bytes>,` and NULL as `-,`. Integers are written in
/// decimal, `simulated` as `0`/`1`. The length prefix makes the encoding injective: no
/// choice of field contents (commas, colons, digits, NUL) can make two different rows
/// encode alike, and NULL differs from the empty string (`0:,`).
public enum AuditCanonical {
    /// Number of fields the encoding carries; a verifier can use it as a schema check.
    public static let fieldCount = 20

    /// The canonical bytes of `r` stored as row `seq` with the formatted timestamp `ts`.
    /// `r.timestampMicros` is not read: `ts` is what the row stores, so it is what is hashed.
    public static func encode(seq: Int64, ts: String, _ r: AuditRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendInteger(seq, to: &out)
        appendText(ts, to: &out)
        appendText(r.event.rawValue, to: &out)
        appendText(r.session, to: &out)
        appendText(r.client, to: &out)
        appendText(r.listener, to: &out)
        appendText(r.principal, to: &out)
        appendText(r.scheme, to: &out)
        appendText(r.target, to: &out)
        appendText(r.resolved, to: &out)
        appendText(r.rule, to: &out)
        appendText(r.decision.rawValue, to: &out)
        appendText(r.reason, to: &out)
        appendInteger(r.status.map(Int64.init), to: &out)
        appendInteger(r.bytesUp, to: &out)
        appendInteger(r.bytesDown, to: &out)
        appendInteger(r.durationMs, to: &out)
        appendText(r.tlsVersion, to: &out)
        appendText(r.tlsCipher, to: &out)
        appendInteger(r.simulated ? 1 : 0, to: &out)
        return out
    }

    // The helpers below run for every audit row on the writer: they append in place with no
    // temporary arrays (the first version's per-integer digit buffers dominated the profile).

    private static func appendText(_ value: String?, to out: inout [UInt8]) {
        guard let value else {
            appendNull(to: &out)
            return
        }
        let bytes = value.utf8
        appendDecimal(UInt64(bytes.count), to: &out)
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: bytes)
        out.append(UInt8(ascii: ","))
    }

    private static func appendInteger(_ value: Int64?, to out: inout [UInt8]) {
        guard let value else {
            appendNull(to: &out)
            return
        }
        let magnitude = value.magnitude
        let length = decimalDigitCount(magnitude) + (value < 0 ? 1 : 0)
        appendDecimal(UInt64(length), to: &out)
        out.append(UInt8(ascii: ":"))
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendDecimal(magnitude, to: &out)
        out.append(UInt8(ascii: ","))
    }

    private static func appendNull(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "-"))
        out.append(UInt8(ascii: ","))
    }

    private static func decimalDigitCount(_ value: UInt64) -> Int {
        var count = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    /// Most significant digit first, so nothing has to be reversed afterwards.
    private static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        }
    }
}
