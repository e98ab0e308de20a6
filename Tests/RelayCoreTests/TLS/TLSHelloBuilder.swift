@testable import RelayCore

/// Builds TLS records, handshake messages and extensions for tests, valid by default and
/// bent wherever a test needs.
enum TLSHelloBuilder {
    static let grease: UInt16 = 0x5A5A

    static func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func u24(_ value: Int) -> [UInt8] { [UInt8(value >> 16 & 0xFF)] + u16(value) }
    static func vector8(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count)] + bytes }
    static func vector16(_ bytes: [UInt8]) -> [UInt8] { u16(bytes.count) + bytes }

    /// One record.
    static func record(_ fragment: [UInt8], type: UInt8 = 0x16, version: UInt16 = 0x0301) -> [UInt8] {
        [type] + u16(Int(version)) + vector16(fragment)
    }

    /// `payload` cut into records of at most `size` bytes each.
    static func records(_ payload: [UInt8], type: UInt8 = 0x16, size: Int) -> [UInt8] {
        stride(from: 0, to: payload.count, by: size).flatMap {
            record(Array(payload[$0..<min(payload.count, $0 + size)]), type: type)
        }
    }

    static func handshake(_ type: UInt8, _ body: [UInt8]) -> [UInt8] { [type] + u24(body.count) + body }

    static func ext(_ type: UInt16, _ data: [UInt8]) -> [UInt8] { u16(Int(type)) + vector16(data) }

    /// server_name with the given (name type, name) entries.
    static func serverName(_ entries: [(UInt8, [UInt8])]) -> [UInt8] {
        ext(0, vector16(entries.flatMap { [$0.0] + vector16($0.1) }))
    }

    static func serverName(_ host: String) -> [UInt8] { serverName([(0, Array(host.utf8))]) }

    static func supportedVersions(_ versions: [UInt16]) -> [UInt8] {
        ext(43, vector8(versions.flatMap { u16(Int($0)) }))
    }

    /// key_share with one share per (group, length).
    static func keyShare(_ shares: [(UInt16, Int)]) -> [UInt8] {
        ext(51, vector16(shares.flatMap { u16(Int($0.0)) + vector16([UInt8](repeating: 0x42, count: $0.1)) }))
    }

    static func supportedGroups(_ groups: [UInt16]) -> [UInt8] { ext(10, vector16(groups.flatMap { u16(Int($0)) })) }

    /// A ClientHello message (handshake header included).
    static func clientHelloMessage(legacyVersion: UInt16 = 0x0303, suites: [UInt16] = [0x1301, 0x1302, 0xC02F],
                                   extensions: [[UInt8]]? = nil, host: String? = "app.corp.example",
                                   versions: [UInt16]? = [0x0304, 0x0303]) -> [UInt8] {
        var list = extensions ?? []
        if extensions == nil {
            if let host { list.append(serverName(host)) }
            if let versions { list.append(supportedVersions(versions)) }
            list.append(supportedGroups([0x001D, 0x0017]))
            list.append(keyShare([(0x001D, 32)]))
        }
        let body = u16(Int(legacyVersion)) + [UInt8](repeating: 0x11, count: 32) + vector8([UInt8](repeating: 0x22, count: 32))
            + vector16(suites.flatMap { u16(Int($0)) }) + vector8([0]) + vector16(list.flatMap { $0 })
        return handshake(1, body)
    }

    /// A ClientHello in one record.
    static func clientHello(legacyVersion: UInt16 = 0x0303, suites: [UInt16] = [0x1301, 0x1302, 0xC02F],
                            extensions: [[UInt8]]? = nil, host: String? = "app.corp.example",
                            versions: [UInt16]? = [0x0304, 0x0303]) -> [UInt8] {
        record(clientHelloMessage(legacyVersion: legacyVersion, suites: suites, extensions: extensions,
                                  host: host, versions: versions))
    }

    /// A ServerHello (or, with `retry`, a HelloRetryRequest) in one record. A version of 1.3 is
    /// sent in `supported_versions`, an older one in `legacy_version`.
    static func serverHello(version: UInt16 = 0x0304, suite: UInt16 = 0x1301, retry: Bool = false,
                            extensions: [[UInt8]]? = nil) -> [UInt8] {
        let legacy: UInt16 = version >= 0x0304 ? 0x0303 : version
        let random = retry ? TLSServerHello.helloRetryRequestRandom : [UInt8](repeating: 0x33, count: 32)
        let list = extensions ?? (version >= 0x0304 ? [ext(43, u16(Int(version)))] : [])
        let body = u16(Int(legacy)) + random + vector8([UInt8](repeating: 0x22, count: 32)) + u16(Int(suite)) + [0]
            + (list.isEmpty && extensions == nil ? [] : vector16(list.flatMap { $0 }))
        return record(handshake(2, body), version: 0x0303)
    }

    static let changeCipherSpec: [UInt8] = [0x14, 0x03, 0x03, 0x00, 0x01, 0x01]

    /// An encrypted-looking application data record of `count` bytes.
    static func applicationData(_ count: Int) -> [UInt8] { record([UInt8](repeating: 0x5C, count: count), type: 0x17, version: 0x0303) }
}
