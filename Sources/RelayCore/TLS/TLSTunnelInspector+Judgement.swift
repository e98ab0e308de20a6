/// Judging hellos against the tunnel's policy.
extension TLSTunnelInspector {
    /// Accepts a ClientHello or throws why not; records what it carried either way.
    mutating func judge(clientHello body: ArraySlice<UInt8>) throws(TLSInspectionRefusal) {
        let hello = try TLSClientHello(body: body)
        lastClientHello = hello
        facts.offeredVersions = hello.offeredVersions
        facts.ech = hello.encryptedClientHello
        facts.sni = nil

        var serverName: Result<Host, HostError>?
        if case .hostName(let bytes) = hello.serverName {
            serverName = Self.host(named: bytes)
            switch serverName {
            case .success(let host): facts.sni = Self.display(host)
            default: facts.sni = Self.escaped(bytes)
            }
        }

        guard hello.offeredVersions.contains(where: policy.versions.contains) else {
            throw TLSInspectionRefusal(
                reason: .tlsVersionRefused,
                detail: "offered=\(Self.list(hello.offeredVersions)) allowed=\(Self.list(policy.versions.versions))",
                alert: .protocolVersion)
        }
        guard policy.sni != .any else { return }
        switch serverName {
        case nil:
            guard policy.sni == .optional else {
                throw TLSInspectionRefusal(reason: .sniMissing, detail: "no server name in the ClientHello (connect=\(connectHost))",
                                           alert: .handshakeFailure)
            }
        case .success(let host):
            guard host == connectHost else {
                throw TLSInspectionRefusal(reason: .sniMismatch, detail: "sni=\(Self.display(host)) connect=\(connectHost)",
                                           alert: .unrecognizedName)
            }
        case .failure(let error):
            throw TLSInspectionRefusal(reason: .sniMismatch,
                                       detail: "sni=\(facts.sni ?? "") is not a host (\(error.detail)) connect=\(connectHost)",
                                       alert: .unrecognizedName)
        }
    }

    /// Accepts a ServerHello or HelloRetryRequest answering `lastClientHello`, or throws why not.
    mutating func judge(serverHello body: ArraySlice<UInt8>, afterRetry: Bool) throws(TLSInspectionRefusal) -> TLSServerHello {
        let hello = try TLSServerHello(body: body)
        let offered = lastClientHello?.offeredVersions ?? []
        let version = TLSVersion(wire: hello.version)
        facts.negotiatedVersion = version
        facts.cipherSuite = hello.cipherSuite
        guard let version, offered.contains(version) else {
            let name = version?.number ?? "0x" + String(hello.version, radix: 16)
            throw .illegal("negotiated=\(name), which the client did not offer (offered=\(Self.list(offered)))")
        }
        guard policy.versions.contains(version) else {
            throw TLSInspectionRefusal(reason: .tlsVersionRefused,
                                       detail: "negotiated=\(version.number) allowed=\(Self.list(policy.versions.versions))",
                                       alert: .protocolVersion)
        }
        guard lastClientHello?.cipherSuites.contains(hello.cipherSuite) == true else {
            throw .illegal("cipher suite \(TLSCipherSuiteName.name(of: hello.cipherSuite)), which the client did not offer")
        }
        if hello.isHelloRetryRequest {
            guard !afterRetry else { throw .illegal("a second HelloRetryRequest") }
            guard version == .tls1_3 else { throw .illegal("a HelloRetryRequest for \(version.number)") }
        }
        return hello
    }

    /// The host a host_name entry names, normalised like a CONNECT host. Only printable ASCII
    /// can name one (IDNs travel as punycode).
    private static func host(named bytes: [UInt8]) -> Result<Host, HostError> {
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(HostError(reason: .badTarget, detail: "bytes outside printable ASCII"))
        }
        return HostNormalizer.normalize(String(decoding: bytes, as: UTF8.self), bracketed: false)
    }

    /// A host as the audit trail writes a server name: IPv6 without brackets.
    private static func display(_ host: Host) -> String {
        switch host {
        case .name(let name): return name
        case .ipv4(let address): return address.description
        case .ipv6(let address): return address.description
        }
    }

    /// A name that is no host, printable: anything outside printable ASCII as `\xNN`.
    private static func escaped(_ bytes: [UInt8]) -> String {
        var text = ""
        for byte in bytes.prefix(255) {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }

    /// `1.2,1.3`, or `none`.
    private static func list(_ versions: [TLSVersion]) -> String {
        versions.isEmpty ? "none" : versions.map(\.number).joined(separator: ",")
    }
}
