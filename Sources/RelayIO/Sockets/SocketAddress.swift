import Glibc

/// An IPv4 or IPv6 address and port, as the kernel sees it.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 bytes (IPv6), network order.
    public let ipBytes: [UInt8]
    public let port: UInt16

    /// Parses an IP literal (IPv6 without brackets); nil for anything else.
    public init?(ip: String, port: UInt16) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            ipBytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, ip, &v6) == 1 {
            ipBytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
        self.port = port
    }

    /// From raw address bytes (4 or 16) and a port.
    public init(bytes: [UInt8], port: UInt16) {
        precondition(bytes.count == 4 || bytes.count == 16, "an IP address is 4 or 16 bytes")
        self.ipBytes = bytes
        self.port = port
    }

    /// From what accept(2), getsockname(2) or getaddrinfo(3) filled in; nil for other families.
    public init?(storage: UnsafeRawPointer) {
        let family = storage.load(as: sockaddr.self).sa_family
        switch Int32(family) {
        case AF_INET:
            let v4 = storage.load(as: sockaddr_in.self)
            var address = v4.sin_addr
            ipBytes = withUnsafeBytes(of: &address) { Array($0) }
            port = UInt16(bigEndian: v4.sin_port)
        case AF_INET6:
            let v6 = storage.load(as: sockaddr_in6.self)
            var address = v6.sin6_addr
            ipBytes = withUnsafeBytes(of: &address) { Array($0) }
            port = UInt16(bigEndian: v6.sin6_port)
        default:
            return nil
        }
    }

    public var family: Int32 { ipBytes.count == 4 ? AF_INET : AF_INET6 }

    /// The address alone, e.g. `10.0.0.1` or `2001:db8::1`.
    public var ipString: String {
        // A stack buffer: every accepted connection's address is formatted for its audit rows.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            let written = ipBytes.withUnsafeBytes { raw in
                inet_ntop(family, raw.baseAddress, buffer.baseAddress, socklen_t(buffer.count))
            }
            return written == nil ? "" : String(cString: buffer.baseAddress!)
        }
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    public var description: String {
        family == AF_INET ? "\(ipString):\(port)" : "[\(ipString)]:\(port)"
    }

    /// Calls `body` with a sockaddr for this address.
    public func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        if family == AF_INET {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: ipBytes) }
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: ipBytes) }
        return try withUnsafePointer(to: &address) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }

    /// The local address of a bound socket.
    static func local(of fd: Int32) throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw IOError("getsockname", errno: errno) }
        guard let address = withUnsafeBytes(of: &storage, { SocketAddress(storage: $0.baseAddress!) }) else {
            throw IOError("getsockname", errno: EAFNOSUPPORT)
        }
        return address
    }
}
