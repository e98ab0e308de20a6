/// The parts of a ServerHello (RFC 8446 §4.1.3, RFC 5246 §7.4.1.3) that tunnel policy judges,
/// HelloRetryRequests included: they share its layout and differ by their random.
struct TLSServerHello: Equatable {
    /// The wire code of the version chosen: `supported_versions` when present, else
    /// `legacy_version`. Not a `TLSVersion` yet: the server may name one no one allows.
    var version: UInt16
    var cipherSuite: UInt16
    /// The random is SHA-256("HelloRetryRequest"): not the final ServerHello.
    var isHelloRetryRequest: Bool

    static let helloRetryRequestRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    /// Parses a ServerHello message body (after the 4-byte handshake header).
    init(body: ArraySlice<UInt8>) throws(TLSInspectionRefusal) {
        var reader = TLSWireReader(body, context: "ServerHello")
        let legacyVersion = try reader.u16()
        guard legacyVersion >> 8 == 3 else {
            throw .malformed("ServerHello legacy_version 0x\(String(legacyVersion, radix: 16)) is not TLS")
        }
        isHelloRetryRequest = try reader.take(32, "random").elementsEqual(Self.helloRetryRequestRandom)
        let sessionID = try reader.vector(lengthBytes: 1, "legacy_session_id_echo")
        guard sessionID.remaining <= 32 else { throw .malformed("legacy_session_id_echo longer than 32 bytes") }
        cipherSuite = try reader.u16()
        _ = try reader.u8()
        var selected: UInt16?
        for (type, data) in try reader.helloExtensions(of: "ServerHello")
        where type == TLSClientHello.supportedVersionsExtension {
            var data = data
            selected = try data.u16()
            try data.expectEnd()
        }
        if let selected {
            // RFC 8446 §4.2.1: the extension only ever selects 1.3 or later.
            guard selected >= TLSVersion.tls1_3.wire else {
                throw .illegal("ServerHello supported_versions selects 0x\(String(selected, radix: 16)), below TLS 1.3")
            }
            version = selected
        } else {
            guard !isHelloRetryRequest else { throw .illegal("HelloRetryRequest without supported_versions") }
            version = legacyVersion
        }
    }
}
