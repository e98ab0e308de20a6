/// Reads the big-endian integers and length-prefixed vectors of TLS's presentation language
/// (RFC 8446 §3) from a slice, refusing any length that runs past what encloses it.
struct TLSWireReader {
    private var bytes: ArraySlice<UInt8>
    /// What a length that runs past the end is called in a refusal.
    private let context: String

    init(_ bytes: ArraySlice<UInt8>, context: String) {
        self.bytes = bytes
        self.context = context
    }

    var isAtEnd: Bool { bytes.isEmpty }
    var remaining: Int { bytes.count }

    mutating func u8() throws(TLSInspectionRefusal) -> UInt8 {
        guard let byte = bytes.first else { throw .malformed("\(context) is truncated") }
        bytes = bytes.dropFirst()
        return byte
    }

    mutating func u16() throws(TLSInspectionRefusal) -> UInt16 {
        let high = try u8()
        return UInt16(high) << 8 | UInt16(try u8())
    }

    mutating func u24() throws(TLSInspectionRefusal) -> Int {
        let high = try u16()
        return Int(high) << 8 | Int(try u8())
    }

    /// The next `count` bytes.
    mutating func take(_ count: Int, _ what: String) throws(TLSInspectionRefusal) -> ArraySlice<UInt8> {
        guard count <= bytes.count else {
            throw .malformed("\(what) of \(count) bytes runs past the \(context) (\(bytes.count) left)")
        }
        let taken = bytes.prefix(count)
        bytes = bytes.dropFirst(count)
        return taken
    }

    /// A vector whose length prefix is `lengthBytes` wide (1 or 2), as a reader of its own.
    mutating func vector(lengthBytes: Int, _ what: String) throws(TLSInspectionRefusal) -> TLSWireReader {
        let length = lengthBytes == 1 ? Int(try u8()) : Int(try u16())
        return TLSWireReader(try take(length, what), context: what)
    }

    /// The extensions block that ends a hello (RFC 8446 §4.2), read to the end of the hello:
    /// each extension's type and data in order, none when the hello ends before the block
    /// (a TLS 1.0–1.2 hello may). One extension twice is refused: two copies could show the
    /// relay one value and the peer another.
    mutating func helloExtensions(of hello: String) throws(TLSInspectionRefusal) -> [(type: UInt16, data: TLSWireReader)] {
        guard !isAtEnd else { return [] }
        var block = try vector(lengthBytes: 2, "extensions")
        try expectEnd()
        var seen = Set<UInt16>()
        var extensions: [(type: UInt16, data: TLSWireReader)] = []
        while !block.isAtEnd {
            let type = try block.u16()
            let data = try block.vector(lengthBytes: 2, "extension 0x\(String(type, radix: 16))")
            guard seen.insert(type).inserted else {
                throw .malformed("extension 0x\(String(type, radix: 16)) appears twice in the \(hello)")
            }
            extensions.append((type, data))
        }
        return extensions
    }

    /// Every byte not read yet, without moving.
    var unread: ArraySlice<UInt8> { bytes }

    /// Refuses bytes left over where the enclosing length said the structure ended.
    func expectEnd() throws(TLSInspectionRefusal) {
        guard bytes.isEmpty else { throw .malformed("\(bytes.count) bytes left over after the \(context)") }
    }
}
