#if canImport(Glibc)
import Glibc
#endif

/// Prints distinct free loopback ports: all are bound at once (so they differ), then
/// released for the proxies bench/run is about to start.
enum FreePort {
    static func run(_ options: Options) throws {
        let count = try options.int("count", default: 1)
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SocketError(operation: "socket") }
            held.append(fd)
            var address = try Endpoint(host: "127.0.0.1", port: 0).sockaddr()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard ok else { throw SocketError(operation: "bind 127.0.0.1:0") }
            print(UInt16(bigEndian: address.sin_port))
        }
    }
}
