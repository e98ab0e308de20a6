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
        var fields = FieldRanges()
        encodeFields(seq: seq, ts: ts.utf8, r, into: &out, fields: &fields)
        return out
    }

    /// Where each field's value bytes sit inside one encoding (nil for NULL), indexed in
    /// column order (0 is `seq`, 1 is `ts`, ... 19 is `simulated`). The writer binds the text
    /// columns straight from the encoded row instead of copying every string again.
    public struct FieldRanges: Sendable {
        public private(set) var ranges: [Range<Int>?] = []

        public init() {
            ranges.reserveCapacity(AuditCanonical.fieldCount)
        }

        public subscript(_ field: Int) -> Range<Int>? { ranges[field] }

        mutating func reset() { ranges.removeAll(keepingCapacity: true) }
        mutating func append(_ range: Range<Int>?) { ranges.append(range) }
    }

    /// Appends the canonical bytes of `r` as row `seq` with the timestamp bytes `ts` to `out`
    /// and records each field's value range in `fields`. With buffers reused from row to row
    /// this allocates nothing: it runs for every row on the audit writer.
    public static func encode(seq: Int64, ts: [UInt8], _ r: AuditRecord,
                              into out: inout [UInt8], fields: inout FieldRanges) {
        encodeFields(seq: seq, ts: ts, r, into: &out, fields: &fields)
    }

    // Generic only inside this module, where each call site gets a specialized copy.
    private static func encodeFields(seq: Int64, ts: some Collection<UInt8>, _ r: AuditRecord,
                                     into out: inout [UInt8], fields: inout FieldRanges) {
        fields.reset()
        appendInteger(seq, to: &out, fields: &fields)
        appendBytes(ts, to: &out, fields: &fields)
        appendText(r.event.rawValue, to: &out, fields: &fields)
        appendText(r.session, to: &out, fields: &fields)
        appendText(r.client, to: &out, fields: &fields)
        appendText(r.listener, to: &out, fields: &fields)
        appendText(r.principal, to: &out, fields: &fields)
        appendText(r.scheme, to: &out, fields: &fields)
        appendText(r.target, to: &out, fields: &fields)
        appendText(r.resolved, to: &out, fields: &fields)
        appendText(r.rule, to: &out, fields: &fields)
        appendText(r.decision.rawValue, to: &out, fields: &fields)
        appendText(r.reason, to: &out, fields: &fields)
        appendInteger(r.status.map(Int64.init), to: &out, fields: &fields)
        appendInteger(r.bytesUp, to: &out, fields: &fields)
        appendInteger(r.bytesDown, to: &out, fields: &fields)
        appendInteger(r.durationMs, to: &out, fields: &fields)
        appendText(r.tlsVersion, to: &out, fields: &fields)
        appendText(r.tlsCipher, to: &out, fields: &fields)
        appendInteger(r.simulated ? 1 : 0, to: &out, fields: &fields)
    }

    // The helpers below run for every audit row on the writer: they append in place with no
    // temporary arrays (the first version's per-integer digit buffers dominated the profile).

    private static func appendText(_ value: String?, to out: inout [UInt8], fields: inout FieldRanges) {
        guard let value else {
            appendNull(to: &out, fields: &fields)
            return
        }
        appendBytes(value.utf8, to: &out, fields: &fields)
    }

    private static func appendBytes(_ bytes: some Collection<UInt8>, to out: inout [UInt8], fields: inout FieldRanges) {
        appendDecimal(UInt64(bytes.count), to: &out)
        out.append(UInt8(ascii: ":"))
        let start = out.count
        out.append(contentsOf: bytes)
        fields.append(start..<out.count)
        out.append(UInt8(ascii: ","))
    }

    private static func appendInteger(_ value: Int64?, to out: inout [UInt8], fields: inout FieldRanges) {
        guard let value else {
            appendNull(to: &out, fields: &fields)
            return
        }
        let magnitude = value.magnitude
        let length = decimalDigitCount(magnitude) + (value < 0 ? 1 : 0)
        appendDecimal(UInt64(length), to: &out)
        out.append(UInt8(ascii: ":"))
        let start = out.count
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendDecimal(magnitude, to: &out)
        fields.append(start..<out.count)
        out.append(UInt8(ascii: ","))
    }

    private static func appendNull(to out: inout [UInt8], fields: inout FieldRanges) {
        fields.append(nil)
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
