import Glibc

/// The host's own IP addresses, from `getifaddrs`: every address of every interface, as
/// 4 or 16 network-order bytes.
public enum InterfaceAddresses {
    /// The addresses now (empty if the kernel would not say).
    public static func current() -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [[UInt8]] = []
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            next = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr,
                  let socketAddress = SocketAddress(storage: UnsafeRawPointer(address)) else { continue }
            addresses.append(socketAddress.ipBytes)
        }
        return addresses
    }
}
