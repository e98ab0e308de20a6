/// Parses the authentication directives into an `AuthConfig`:
///
/// ```
/// auth none | client-cert | basic|digest|ntlm|negotiate [key=value …]
/// auth-helper SCHEME [children=N] [concurrency=M] COMMAND [ARGS …]
/// auth-lockout [failures=N] [source-failures=N] [window=D] [duration=D]
/// auth-cache-ttl DURATION
/// user-key-file PATH
/// ```
///
/// Each `auth SCHEME` appears once; unknown keys are errors, never ignored, so a typo in a
/// security setting cannot silently leave the default in force.
struct AuthDirectiveParser {
    private(set) var config = AuthConfig()
    private var seen: [String: SourceLocation] = [:]

    /// `at` maps a token to its location; `args` are the tokens after the directive.
    mutating func parse(directive: ConfigToken, args: [ConfigToken],
                        at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        let here = at(directive)
        switch directive.text {
        case "auth":
            guard let schemeToken = args.first else {
                throw ConfigError(location: here, message: "missing argument: expected 'auth none|client-cert|basic|digest|ntlm|negotiate [key=value ...]'")
            }
            try once("auth \(schemeToken.text)", here)
            if schemeToken.text == "client-cert", let extra = args.dropFirst().first {
                let hint = extra.text.contains("=") ? "" : " (another scheme goes on its own line: 'auth \(extra.text)')"
                throw ConfigError(location: at(extra), message: "'auth client-cert' takes no options\(hint)")
            }
            let options = try Self.options(Array(args.dropFirst()), at: at)
            try parseScheme(schemeToken, options, here: here, at: at)

        case "auth-helper":
            guard args.count >= 2, let scheme = AuthConfig.Scheme(rawValue: args[0].text) else {
                throw ConfigError(location: args.first.map(at) ?? here,
                                  message: "expected 'auth-helper basic|digest|ntlm|negotiate [children=N] [concurrency=M] COMMAND [ARGS ...]'")
            }
            try once("auth-helper \(scheme.rawValue)", here)
            var rest = args.dropFirst()
            var children = 2
            // Squid's default: most helpers (basic_ncsa_auth among them) do not speak channel ids.
            var concurrency = 0
            while let token = rest.first, let (key, value) = Self.split(token), key == "children" || key == "concurrency" {
                let number = try Self.count(value, token, at: at, key: key, range: key == "children" ? 1...64 : 0...1024)
                if key == "children" { children = number } else { concurrency = number }
                rest = rest.dropFirst()
            }
            if scheme.isConnectionBound && concurrency != 0 {
                throw ConfigError(location: here, message: "auth-helper \(scheme.rawValue): a stateful helper takes no concurrency")
            }
            guard let command = rest.first else {
                throw ConfigError(location: here, message: "auth-helper \(scheme.rawValue): missing COMMAND")
            }
            guard command.text.hasPrefix("/") else {
                throw ConfigError(location: at(command), message: "auth-helper COMMAND must be an absolute path, not '\(command.text)'")
            }
            config.helpers.append(AuthConfig.Helper(scheme: scheme, argv: rest.map(\.text), children: children,
                                                    concurrency: concurrency, location: here))

        case "auth-lockout":
            try once(directive.text, here)
            for (key, value, token) in try Self.options(args, at: at) {
                switch key {
                case "failures": config.lockout.principalFailures = try Self.count(value, token, at: at, key: key, range: 1...100_000)
                case "source-failures": config.lockout.sourceFailures = try Self.count(value, token, at: at, key: key, range: 1...1_000_000)
                case "window": config.lockout.window = try Self.duration(value, token, at: at, key: key)
                case "duration": config.lockout.duration = try Self.duration(value, token, at: at, key: key)
                default: throw Self.unknownKey(key, token, directive: "auth-lockout", at: at)
                }
            }

        case "auth-cache-ttl":
            try once(directive.text, here)
            guard args.count == 1 else {
                throw ConfigError(location: here, message: "expected 'auth-cache-ttl DURATION' (0 turns the cache off)")
            }
            if args[0].text == "0" {
                config.cacheTTL = .zero
            } else {
                config.cacheTTL = try Self.duration(args[0].text, args[0], at: at, key: "auth-cache-ttl")
            }

        case "user-key-file":
            try once(directive.text, here)
            guard args.count == 1, args[0].text.hasPrefix("/") else {
                throw ConfigError(location: args.first.map(at) ?? here, message: "expected 'user-key-file /ABSOLUTE/PATH'")
            }
            config.userKeyFile = args[0].text

        default:
            preconditionFailure("not an auth directive: \(directive.text)")
        }
    }

    /// The directives this parser owns.
    static let directives: Set<String> = ["auth", "auth-helper", "auth-lockout", "auth-cache-ttl", "user-key-file"]

    /// Whole-config checks: `auth none` alone, helpers for configured schemes only, and
    /// every scheme has a credential source.
    func finish(mainFile: String) throws(ConfigError) -> AuthConfig {
        if config.explicitlyNone, let first = seen.first(where: { $0.key.hasPrefix("auth ") && $0.key != "auth none" }) {
            throw ConfigError(location: first.value, message: "'auth none' cannot be combined with '\(first.key)'")
        }
        for helper in config.helpers where !config.schemes.contains(helper.scheme) {
            throw ConfigError(location: helper.location, message: "auth-helper \(helper.scheme.rawValue) without 'auth \(helper.scheme.rawValue)'")
        }
        if let digest = config.digest, config.helper(for: .digest) != nil, digest.algorithms.contains(.sha256) {
            let location = config.helper(for: .digest)!.location
            throw ConfigError(location: location, message: "a Squid digest helper returns MD5 HA1 only: set 'auth digest algorithm=MD5'")
        }
        if let negotiate = config.negotiate, negotiate.keytab == nil, config.helper(for: .negotiate) == nil {
            throw ConfigError(location: seen["auth negotiate"]!, message: "auth negotiate needs keytab=PATH or an 'auth-helper negotiate'")
        }
        return config
    }

    private mutating func parseScheme(_ token: ConfigToken, _ options: [(String, String, ConfigToken)],
                                      here: SourceLocation, at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        switch token.text {
        case "none":
            if let (_, _, extra) = options.first {
                throw ConfigError(location: at(extra), message: "'auth none' takes no options")
            }
            config.explicitlyNone = true
        case "client-cert":
            // Checked against the listeners in the whole-config pass: only an HTTPS listener
            // with client-ca= can receive a certificate.
            config.clientCertificate = AuthConfig.ClientCertificate(location: here)
        case "basic":
            var basic = AuthConfig.Basic()
            for (key, value, option) in options {
                guard key == "realm" else { throw Self.unknownKey(key, option, directive: "auth basic", at: at) }
                basic.realm = try Self.realm(value, option, at: at)
            }
            config.basic = basic
        case "digest":
            var digest = AuthConfig.Digest()
            for (key, value, option) in options {
                switch key {
                case "realm": digest.realm = try Self.realm(value, option, at: at)
                case "algorithm":
                    var algorithms: [DigestAlgorithm] = []
                    for name in value.split(separator: ",", omittingEmptySubsequences: false) {
                        guard let algorithm = DigestAlgorithm(token: String(name)), !algorithms.contains(algorithm) else {
                            throw ConfigError(location: at(option), message: "bad algorithm list '\(value)' (expected SHA-256, MD5 or SHA-256,MD5)")
                        }
                        algorithms.append(algorithm)
                    }
                    digest.algorithms = algorithms
                case "nonce-ttl": digest.nonceLifetime = try Self.duration(value, option, at: at, key: key)
                default: throw Self.unknownKey(key, option, directive: "auth digest", at: at)
                }
            }
            config.digest = digest
        case "ntlm":
            var ntlm = AuthConfig.NTLM()
            for (key, value, option) in options {
                guard key == "domain" else { throw Self.unknownKey(key, option, directive: "auth ntlm", at: at) }
                guard (1...15).contains(value.utf8.count),
                      value.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") })
                else {
                    throw ConfigError(location: at(option), message: "bad NTLM domain '\(value)' (a NetBIOS name: 1-15 letters, digits, '-', '_')")
                }
                ntlm.domain = value.uppercased()
            }
            config.ntlm = ntlm
        case "negotiate":
            var negotiate = AuthConfig.Negotiate()
            for (key, value, option) in options {
                switch key {
                case "keytab":
                    guard value.hasPrefix("/") else {
                        throw ConfigError(location: at(option), message: "keytab must be an absolute path")
                    }
                    negotiate.keytab = value
                case "principal":
                    guard !value.isEmpty, value.utf8.count <= 512 else {
                        throw ConfigError(location: at(option), message: "bad principal '\(value)'")
                    }
                    negotiate.principal = value
                default: throw Self.unknownKey(key, option, directive: "auth negotiate", at: at)
                }
            }
            config.negotiate = negotiate
        default:
            throw ConfigError(location: at(token), message: "unknown auth scheme '\(token.text)' (expected none, client-cert, basic, digest, ntlm or negotiate)")
        }
    }

    private mutating func once(_ key: String, _ location: SourceLocation) throws(ConfigError) {
        if let first = seen[key] {
            throw ConfigError(location: location, message: "duplicate '\(key)' (first set at \(first.rule))")
        }
        seen[key] = location
    }

    private static func split(_ token: ConfigToken) -> (String, String)? {
        guard let equals = token.text.firstIndex(of: "=") else { return nil }
        return (String(token.text[..<equals]), String(token.text[token.text.index(after: equals)...]))
    }

    private static func options(_ tokens: [ConfigToken],
                                at: (ConfigToken) -> SourceLocation) throws(ConfigError) -> [(String, String, ConfigToken)] {
        var result: [(String, String, ConfigToken)] = []
        for token in tokens {
            guard let (key, value) = split(token), !key.isEmpty, !value.isEmpty else {
                throw ConfigError(location: at(token), message: "expected key=value, found '\(token.text)'")
            }
            if result.contains(where: { $0.0 == key }) {
                throw ConfigError(location: at(token), message: "duplicate option '\(key)'")
            }
            result.append((key, value, token))
        }
        return result
    }

    private static func unknownKey(_ key: String, _ token: ConfigToken, directive: String,
                                   at: (ConfigToken) -> SourceLocation) -> ConfigError {
        ConfigError(location: at(token), message: "unknown option '\(key)' for '\(directive)'")
    }

    /// A realm is shown to users and quoted in challenges: printable, no quotes or backslashes.
    private static func realm(_ value: String, _ token: ConfigToken,
                              at: (ConfigToken) -> SourceLocation) throws(ConfigError) -> String {
        guard value.utf8.count <= 128, !value.contains("\""), !value.contains("\\") else {
            throw ConfigError(location: at(token), message: "bad realm '\(value)' (at most 128 bytes, no quotes or backslashes)")
        }
        return value
    }

    private static func count(_ value: String, _ token: ConfigToken, at: (ConfigToken) -> SourceLocation,
                              key: String, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        try ConfigValueParser.count(value, in: range, for: key, at: at(token))
    }

    private static func duration(_ value: String, _ token: ConfigToken, at: (ConfigToken) -> SourceLocation,
                                 key: String) throws(ConfigError) -> Duration {
        guard let duration = ConfigValueParser.duration(value), duration >= .seconds(1),
              duration <= .seconds(7 * 24 * 3600) else {
            throw ConfigError(location: at(token), message: "bad duration '\(value)' for '\(key)' (expected 1s-7d as 30s, 5m, 1h)")
        }
        return duration
    }
}
