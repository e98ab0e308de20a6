/// The byte string each audit row's hash covers.
///
/// The base fields, in this order: seq, ts, event, session, client, listener, principal,
/// scheme, target, resolved, rule, decision, reason, status, bytes_up, bytes_down,
/// duration_ms, tls_version, tls_cipher, simulated; each as `<decimal byte length>:<UTF-8
/// bytes>,` and NULL as `-,`. Integers are written in decimal, `simulated` as `0`/`1`. The
/// length prefix makes the encoding injective: no choice of field contents (commas, colons,
/// digits, NUL) can make two different rows encode alike, and NULL differs from the empty
/// string (`0:,`).
///
/// The TLS extension group (tls_sni, tls_ech as `0`/`1`, client_tls_version,
/// client_tls_cipher) follows only when one of them is not NULL, after the marker
/// `tlsExtensionMarker`. A row without them therefore encodes, and hashes, as the base form
/// alone, so trails written by builds that knew only the base form still verify. The marker
/// cannot be read as a field (every field starts with a digit or `-`), so a row with the
/// group never encodes like one without it.
public enum AuditCanonical {
    /// Fields of the base form: every row carries them.
    public static let baseFieldCount = 20

    /// Fields an encoding can carry: the base ones, then the TLS extension group.
    public static let fieldCount = 24

    /// Written between the base fields and the TLS extension group.
    public static let tlsExtensionMarker: StaticString = "v2,"

    /// The canonical bytes of `r` stored as row `seq` with the formatted timestamp `ts`.
    /// `r.timestampMicros` is not read: `ts` is what the row stores, so it is what is hashed.
    public static func encode(seq: Int64, ts: String, _ r: AuditRecord) -> [UInt8] {
        var ts = ts
        return ts.withUTF8 { ts in
            let fields = FieldRanges()
            return [UInt8](unsafeUninitializedCapacity: maxEncodedCount(r, timestampCount: ts.count)) { out, count in
                count = encode(seq: seq, ts: UnsafeRawBufferPointer(ts), r,
                               into: UnsafeMutableRawBufferPointer(out), fields: fields)
            }
        }
    }

    /// Room `encode(seq:ts:_:into:fields:)` may need for `r` with a timestamp of
    /// `timestampCount` bytes: each field's length prefix and separators fit in 22 bytes and
    /// each integer in 20.
    public static func maxEncodedCount(_ r: AuditRecord, timestampCount: Int) -> Int {
        func count(_ s: String?) -> Int { s?.utf8.count ?? 0 }
        return fieldCount * 42 + tlsExtensionMarker.utf8CodeUnitCount + timestampCount
            + r.event.rawValue.utf8.count + r.session.utf8.count + r.client.utf8.count
            + r.listener.utf8.count + count(r.principal) + count(r.scheme) + count(r.target)
            + count(r.resolved) + count(r.rule) + r.decision.rawValue.utf8.count + r.reason.utf8.count
            + count(r.tlsVersion) + count(r.tlsCipher)
            + count(r.tlsSNI) + count(r.clientTLSVersion) + count(r.clientTLSCipher)
    }

    /// Where each field's value bytes sit inside the last encoding (nil for NULL), indexed in
    /// canonical order (0 is `seq`, 1 is `ts`, ... 19 is `simulated`, 20 is `tls_sni`, ... 23
    /// is `client_tls_cipher`; the extension fields are nil when the group is absent). The
    /// writer binds the text columns straight from the encoded row instead of copying every
    /// string again. Reused from row to row; not thread-safe.
    public final class FieldRanges {
        /// `(start, end)` per field; `end == -1` marks NULL.
        private let bounds = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2 * AuditCanonical.fieldCount)

        public init() {
            bounds.initialize(repeating: -1)
        }

        deinit {
            bounds.deallocate()
        }

        public subscript(_ field: Int) -> Range<Int>? {
            let end = bounds[2 * field + 1]
            return end < 0 ? nil : bounds[2 * field]..<end
        }

        fileprivate func set(_ field: Int, _ start: Int, _ end: Int) {
            bounds[2 * field] = start
            bounds[2 * field + 1] = end
        }
    }

    /// Writes the canonical bytes of `r` as row `seq` with the timestamp bytes `ts` to the
    /// start of `out`, which must hold `maxEncodedCount(r, timestampCount: ts.count)` bytes,
    /// records each field's value range in `fields` and returns the byte count.
    ///
    /// It runs for every row on the audit writer, so it writes through a raw pointer: an
    /// `[UInt8]` appended byte by byte paid a uniqueness and capacity check per byte, which
    /// with the digit loops was a quarter of the writer's time per row.
    public static func encode(seq: Int64, ts: UnsafeRawBufferPointer, _ r: AuditRecord,
                              into out: UnsafeMutableRawBufferPointer, fields: FieldRanges) -> Int {
        precondition(out.count >= maxEncodedCount(r, timestampCount: ts.count))
        var w = Writer(base: out.baseAddress!, fields: fields)
        w.integer(seq)
        w.bytes(ts)
        w.text(r.event.rawValue)
        w.text(r.session)
        w.text(r.client)
        w.text(r.listener)
        w.text(r.principal)
        w.text(r.scheme)
        w.text(r.target)
        w.text(r.resolved)
        w.text(r.rule)
        w.text(r.decision.rawValue)
        w.text(r.reason)
        w.integer(r.status.map(Int64.init))
        w.integer(r.bytesUp)
        w.integer(r.bytesDown)
        w.integer(r.durationMs)
        w.text(r.tlsVersion)
        w.text(r.tlsCipher)
        w.integer(r.simulated ? 1 : 0)
        if r.hasTLSExtension {
            w.marker(tlsExtensionMarker)
            w.text(r.tlsSNI)
            w.integer(r.tlsECH.map { $0 ? 1 : 0 })
            w.text(r.clientTLSVersion)
            w.text(r.clientTLSCipher)
        } else {
            w.absent(fieldCount - baseFieldCount)
        }
        return w.offset
    }

    /// Appends fields one after another; `field` counts them for `FieldRanges`.
    private struct Writer {
        let base: UnsafeMutableRawPointer
        let fields: FieldRanges
        var offset = 0
        var field = 0

        mutating func text(_ value: String?) {
            guard var value else { return null() }
            if let done: Void = value.utf8.withContiguousStorageIfAvailable({ bytes(UnsafeRawBufferPointer($0)) }) {
                return done
            }
            value.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
        }

        mutating func bytes(_ value: UnsafeRawBufferPointer) {
            decimal(UInt64(value.count))
            byte(UInt8(ascii: ":"))
            let start = offset
            if let source = value.baseAddress, value.count > 0 {
                (base + offset).copyMemory(from: source, byteCount: value.count)
                offset += value.count
            }
            fields.set(field, start, offset)
            field += 1
            byte(UInt8(ascii: ","))
        }

        mutating func integer(_ value: Int64?) {
            guard let value else { return null() }
            let magnitude = value.magnitude
            decimal(UInt64(Self.digitCount(magnitude) + (value < 0 ? 1 : 0)))
            byte(UInt8(ascii: ":"))
            let start = offset
            if value < 0 { byte(UInt8(ascii: "-")) }
            decimal(magnitude)
            fields.set(field, start, offset)
            field += 1
            byte(UInt8(ascii: ","))
        }

        /// Writes `marker`'s bytes as they are: not a field.
        mutating func marker(_ marker: StaticString) {
            (base + offset).copyMemory(from: marker.utf8Start, byteCount: marker.utf8CodeUnitCount)
            offset += marker.utf8CodeUnitCount
        }

        /// Records the next `count` fields as NULL without writing them.
        mutating func absent(_ count: Int) {
            for _ in 0..<count {
                fields.set(field, 0, -1)
                field += 1
            }
        }

        mutating func null() {
            fields.set(field, 0, -1)
            field += 1
            byte(UInt8(ascii: "-"))
            byte(UInt8(ascii: ","))
        }

        mutating func byte(_ b: UInt8) {
            base.storeBytes(of: b, toByteOffset: offset, as: UInt8.self)
            offset += 1
        }

        /// Fills the digits from the right, so nothing is reversed and no divisor is searched.
        mutating func decimal(_ value: UInt64) {
            let count = Self.digitCount(value)
            var rest = value
            var at = offset + count
            repeat {
                at -= 1
                base.storeBytes(of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10), toByteOffset: at, as: UInt8.self)
                rest /= 10
            } while rest > 0
            offset += count
        }

        static func digitCount(_ value: UInt64) -> Int {
            var count = 1
            var threshold: UInt64 = 10
            while count < 20, value >= threshold {
                count += 1
                threshold = threshold &* 10
            }
            return count
        }
    }
}
