import Dispatch
import Glibc

/// getaddrinfo(3) off the event loops: at most `threads` lookups run at once on a
/// concurrent queue, up to `maxWaiting` wait their turn, and the rest are refused at once
/// (a flood of lookups must not grow memory or stall the loops).
public final class Resolver: Sendable {
    private let pool: WorkerPool

    public init(threads: Int = 4, maxWaiting: Int = 1024) {
        pool = WorkerPool(label: "dynrelay.resolver", threads: threads, maxWaiting: maxWaiting)
    }

    /// Resolves `host` to TCP addresses (IPv4 and IPv6, duplicates removed, resolver order
    /// kept). `completion` runs on a resolver thread: hop to your loop from there.
    public func resolve(host: String, port: UInt16,
                        completion: @escaping @Sendable (Result<[SocketAddress], IOError>) -> Void) {
        let admitted = pool.submit { completion(Self.lookup(host, port: port)) }
        if !admitted {
            completion(.failure(IOError("resolve \(host): too many lookups waiting", errno: EAGAIN)))
        }
    }

    private static func lookup(_ host: String, port: UInt16) -> Result<[SocketAddress], IOError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            let detail = String(cString: gai_strerror(status))
            return .failure(IOError("resolve \(host): \(detail)", errno: status == EAI_SYSTEM ? errno : EHOSTUNREACH))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let raw = entry.pointee.ai_addr, let found = SocketAddress(storage: UnsafeRawPointer(raw)) {
                let address = SocketAddress(bytes: found.ipBytes, port: port)
                if !addresses.contains(address) { addresses.append(address) }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(IOError("resolve \(host): no addresses", errno: EHOSTUNREACH)) : .success(addresses)
    }
}
