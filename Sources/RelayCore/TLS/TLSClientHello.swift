/// The parts of a ClientHello (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2) that tunnel policy judges.
struct TLSClientHello: Equatable {
    /// What the server_name extension (RFC 6066 §3) named.
    enum ServerName: Equatable {
        /// No extension, or one listing only name types other than host_name.
        case absent
        /// The one host_name entry's bytes.
        case hostName([UInt8])
    }

    /// Offered versions, ascending: `supported_versions` when present, else every version
    /// from 1.0 up to `legacy_version` (a client without the extension offers its maximum and,
    /// implicitly, everything below it; 1.3 needs the extension, so the range stops at 1.2).
    var offeredVersions: [TLSVersion]
    /// The cipher suites, GREASE left out.
    var cipherSuites: [UInt16]
    var serverName: ServerName
    /// `encrypted_client_hello` (0xfe0d) is present.
    var encryptedClientHello: Bool

    static let serverNameExtension: UInt16 = 0
    static let supportedVersionsExtension: UInt16 = 43
    static let encryptedClientHelloExtension: UInt16 = 0xFE0D

    /// Parses a ClientHello message body (after the 4-byte handshake header).
    init(body: ArraySlice<UInt8>) throws(TLSInspectionRefusal) {
        var reader = TLSWireReader(body, context: "ClientHello")
        let legacyVersion = try reader.u16()
        guard legacyVersion >> 8 == 3 else {
            throw .malformed("ClientHello legacy_version 0x\(String(legacyVersion, radix: 16)) is not TLS")
        }
        _ = try reader.take(32, "random")
        let sessionID = try reader.vector(lengthBytes: 1, "legacy_session_id")
        guard sessionID.remaining <= 32 else { throw .malformed("legacy_session_id longer than 32 bytes") }
        var suites = try reader.vector(lengthBytes: 2, "cipher_suites")
        guard suites.remaining >= 2, suites.remaining % 2 == 0 else {
            throw .malformed("cipher_suites of \(suites.remaining) bytes")
        }
        cipherSuites = []
        while !suites.isAtEnd {
            let suite = try suites.u16()
            if !TLSGrease.contains(suite) { cipherSuites.append(suite) }
        }
        let compression = try reader.vector(lengthBytes: 1, "legacy_compression_methods")
        guard compression.remaining >= 1 else { throw .malformed("no compression methods") }

        var supportedVersions: [TLSVersion]?
        serverName = .absent
        encryptedClientHello = false
        for (type, data) in try reader.helloExtensions(of: "ClientHello") {
            switch type {
            case Self.serverNameExtension: serverName = try Self.serverName(data)
            case Self.supportedVersionsExtension: supportedVersions = try Self.supportedVersions(data)
            case Self.encryptedClientHelloExtension: encryptedClientHello = true
            default: break
            }
        }
        if let supportedVersions {
            offeredVersions = supportedVersions
        } else {
            offeredVersions = TLSVersion.allCases.filter { $0.wire <= min(legacyVersion, TLSVersion.tls1_2.wire) }
        }
    }

    /// `ServerNameList`: the one host_name entry, or `.absent` when no entry is a host_name.
    private static func serverName(_ data: TLSWireReader) throws(TLSInspectionRefusal) -> ServerName {
        var data = data
        var list = try data.vector(lengthBytes: 2, "server_name_list")
        try data.expectEnd()
        guard !list.isAtEnd else { throw .malformed("empty server_name_list") }
        var hostName: [UInt8]?
        while !list.isAtEnd {
            let nameType = try list.u8()
            let name = try list.vector(lengthBytes: 2, "server name")
            let bytes = Array(name.unread)
            guard nameType == 0 else { continue }
            guard hostName == nil else { throw .malformed("two host_name entries in server_name") }
            guard !bytes.isEmpty else { throw .malformed("empty host_name in server_name") }
            hostName = bytes
        }
        return hostName.map(ServerName.hostName) ?? .absent
    }

    /// `supported_versions` in a ClientHello: a list of 2-byte versions, known ones kept.
    private static func supportedVersions(_ data: TLSWireReader) throws(TLSInspectionRefusal) -> [TLSVersion] {
        var data = data
        var list = try data.vector(lengthBytes: 1, "supported_versions")
        try data.expectEnd()
        guard list.remaining >= 2, list.remaining % 2 == 0 else {
            throw .malformed("supported_versions of \(list.remaining) bytes")
        }
        var versions = Set<TLSVersion>()
        while !list.isAtEnd {
            if let version = TLSVersion(wire: try list.u16()) { versions.insert(version) }
        }
        return versions.sorted()
    }
}
