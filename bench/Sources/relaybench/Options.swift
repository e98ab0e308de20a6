#if canImport(Glibc)
import Glibc
#endif

/// A bad command line; exits 64.
struct UsageError: Error {
    let message: String
}

/// `--key value` options, parsed once, read with typed accessors that name the bad option.
struct Options {
    private var values: [String: String] = [:]

    /// Options that take no value.
    private static let flags: Set<String> = [
        "digest-reuse-nonce", "tls", "proxy-tls", "upstream-tls", "resume", "handshake-only", "preamble",
    ]

    init(_ args: [String]) throws {
        var index = 0
        while index < args.count {
            let key = args[index]
            if key.hasPrefix("--"), Self.flags.contains(String(key.dropFirst(2))) {
                values[String(key.dropFirst(2))] = "true"
                index += 1
                continue
            }
            guard key.hasPrefix("--"), index + 1 < args.count else {
                throw UsageError(message: "expected --option value, got \(key)")
            }
            values[String(key.dropFirst(2))] = args[index + 1]
            index += 2
        }
    }

    func string(_ key: String, default fallback: String? = nil) throws -> String {
        if let value = values[key] ?? fallback { return value }
        throw UsageError(message: "--\(key) is required")
    }

    func optionalString(_ key: String) -> String? { values[key] }

    /// A valueless option such as `--digest-reuse-nonce`: present or not.
    func flag(_ key: String) -> Bool { values[key] != nil }

    func int(_ key: String, default fallback: Int? = nil) throws -> Int {
        guard let text = values[key] else {
            if let fallback { return fallback }
            throw UsageError(message: "--\(key) is required")
        }
        guard let value = Int(text), value >= 0 else {
            throw UsageError(message: "--\(key): not a count: \(text)")
        }
        return value
    }

    func seconds(_ key: String, default fallback: Double) throws -> Double {
        guard let text = values[key] else { return fallback }
        guard let value = Double(text), value > 0 else {
            throw UsageError(message: "--\(key): not a duration in seconds: \(text)")
        }
        return value
    }

    /// Sizes like `2G`, `512M`, `64K` (binary multiples) or plain bytes.
    func size(_ key: String, default fallback: Int) throws -> Int {
        guard var text = values[key] else { return fallback }
        var multiplier = 1
        switch text.last {
        case "K", "k": multiplier = 1 << 10
        case "M", "m": multiplier = 1 << 20
        case "G", "g": multiplier = 1 << 30
        default: break
        }
        if multiplier != 1 { text.removeLast() }
        guard let value = Int(text), value > 0 else {
            throw UsageError(message: "--\(key): not a size: \(values[key] ?? "")")
        }
        return value * multiplier
    }

    /// `HOST:PORT` with an IPv4 literal host (the bench is loopback only).
    func endpoint(_ key: String) throws -> Endpoint? {
        guard let text = values[key] else { return nil }
        guard let colon = text.lastIndex(of: ":"),
              let port = UInt16(text[text.index(after: colon)...]), port != 0 else {
            throw UsageError(message: "--\(key): expected HOST:PORT, got \(text)")
        }
        return Endpoint(host: String(text[..<colon]), port: port)
    }

    /// Where a client connects and whether it must speak CONNECT first.
    func route() throws -> Route {
        guard let target = try endpoint("connect") else {
            throw UsageError(message: "--connect HOST:PORT is required")
        }
        let proxy = try endpoint("proxy")
        let mode = try string("mode", default: proxy == nil ? "plain" : "connect")
        switch mode {
        case "connect":
            guard let proxy else { throw UsageError(message: "--mode connect needs --proxy") }
            return Route(dial: proxy, connectTarget: target)
        case "plain":
            return Route(dial: proxy ?? target, connectTarget: nil)
        default:
            throw UsageError(message: "--mode must be connect or plain")
        }
    }

    /// Prefix every result line with the caller's label so bench/run can tell rows apart.
    var label: String { values["label"] ?? "unnamed" }
}
