import RelayCore

/// A bad command line; exits 64.
struct UsageError: Error {
    let message: String
}

/// `--key value` options, parsed once, read with typed accessors that name the bad option.
struct Options {
    private var values: [String: String] = [:]

    init(_ args: [String]) throws {
        var index = 0
        while index < args.count {
            let key = args[index]
            guard key.hasPrefix("--"), index + 1 < args.count else {
                throw UsageError(message: "expected --option value, got \(key)")
            }
            values[String(key.dropFirst(2))] = args[index + 1]
            index += 2
        }
    }

    func string(_ key: String) throws -> String {
        guard let value = values[key] else { throw UsageError(message: "--\(key) is required") }
        return value
    }

    func string(_ key: String, default fallback: String) -> String { values[key] ?? fallback }

    /// A count of at least 1.
    func count(_ key: String, default fallback: Int) throws -> Int {
        guard let text = values[key] else { return fallback }
        guard let value = Int(text), value >= 1 else {
            throw UsageError(message: "--\(key): not a count: \(text)")
        }
        return value
    }
}

extension Options {
    /// The `--relay` URL as the library's relay list.
    func relays() throws -> [RelayEndpoint] {
        let entry = try string("relay")
        do {
            return try RelayList.parse([entry])
        } catch {
            throw UsageError(message: "--relay \(entry): \(error)")
        }
    }

    /// A port number.
    func port(_ key: String) throws -> UInt16 {
        let text = try string(key)
        guard let port = UInt16(text), port > 0 else { throw UsageError(message: "--\(key): not a port: \(text)") }
        return port
    }
}
