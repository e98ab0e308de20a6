import Dispatch
import Glibc
import Synchronization

/// getaddrinfo(3) off the event loops: at most `threads` lookups run at once on a
/// concurrent queue, up to `maxWaiting` wait their turn, and the rest are refused at once
/// (a flood of lookups must not grow memory or stall the loops).
public final class Resolver: Sendable {
    private struct Job: Sendable {
        let host: String
        let port: UInt16
        let completion: @Sendable (Result<[SocketAddress], IOError>) -> Void
    }

    private struct State {
        var running = 0
        /// Lookups admitted and not yet started, oldest first (at most `maxWaiting`).
        var waiting: [Job] = []
    }

    private let threads: Int
    private let maxWaiting: Int
    private let queue = DispatchQueue(label: "dynrelay.resolver", attributes: .concurrent)
    private let state = Mutex(State())

    public init(threads: Int = 4, maxWaiting: Int = 1024) {
        self.threads = threads
        self.maxWaiting = maxWaiting
    }

    /// Resolves `host` to TCP addresses (IPv4 and IPv6, duplicates removed, resolver order
    /// kept). `completion` runs on a resolver thread: hop to your loop from there.
    public func resolve(host: String, port: UInt16,
                        completion: @escaping @Sendable (Result<[SocketAddress], IOError>) -> Void) {
        let job = Job(host: host, port: port, completion: completion)
        let admitted: Bool? = state.withLock { state in
            if state.running < threads {
                state.running += 1
                return true
            }
            if state.waiting.count < maxWaiting {
                state.waiting.append(job)
                return false
            }
            return nil
        }
        switch admitted {
        case true?: queue.async { self.run(job) }
        case false?: break
        case nil: completion(.failure(IOError("resolve \(host): too many lookups waiting", errno: EAGAIN)))
        }
    }

    private func run(_ first: Job) {
        var job = first
        while true {
            job.completion(Self.lookup(job.host, port: job.port))
            let next: Job? = state.withLock { state in
                guard !state.waiting.isEmpty else {
                    state.running -= 1
                    return nil
                }
                // Removed, not skipped over: a queue that never empties must not keep every
                // finished job (and what its completion captured) alive.
                return state.waiting.removeFirst()
            }
            guard let next else { return }
            job = next
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
