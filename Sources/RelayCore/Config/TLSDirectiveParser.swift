/// Parses the deployment-wide TLS directives and keeps the TLS parts of `listen … tls` and
/// `server` lines until the whole configuration is read:
///
/// ```
/// tls-versions VERSION ...                  (1.0 1.1 1.2 1.3 GDEnableTLS1.1 GDEnableTLS1.2)
/// GDEnableTLS1.1 | GDEnableTLS1.2           (adds to the global set, as the client SDK's toggles do)
/// tls-inspect-timeout DURATION
/// tls-inspect-on-timeout refuse|pass
/// tls-inspect-on-overflow refuse|pass
/// ```
///
/// A listener or rule without its own `tls-versions=` takes the global set, and the global
/// line may come after it (or in a later include), so versions are settled in `finish`.
struct TLSDirectiveParser {
    /// What the TLS part of a configuration comes to once every line is read.
    struct Result {
        var versions: TLSVersionSet
        var inspection: TLSInspectionSettings
        var listeners: [TLSListener]
        var warnings: [ConfigWarning]
    }

    /// The directives this parser owns.
    static let directives: Set<String> = ["tls-versions", "GDEnableTLS1.1", "GDEnableTLS1.2", "tls-inspect-timeout",
                                          "tls-inspect-on-timeout", "tls-inspect-on-overflow"]

    private var seen: [String: SourceLocation] = [:]
    /// The words of `tls-versions` followed by the `GDEnable` directives, in one list so
    /// they combine exactly as they would written on one `tls-versions` line.
    private var globalWords: [Substring] = []
    private var inspection = TLSInspectionSettings()
    private var listeners: [(listener: TLSListener, versionWords: [Substring]?)] = []
    /// Rule index → the words of its own `tls-versions=`.
    private var ruleVersionWords: [Int: [Substring]] = [:]
    private var warnings: [ConfigWarning] = []

    /// Whether some TLS listener asks clients for certificates (`client-ca=`).
    var anyListenerAsksForClientCertificates: Bool {
        listeners.contains { $0.listener.tls.clientCAFile != nil }
    }

    /// `at` maps a token to its location; `args` are the tokens after the directive.
    mutating func parse(directive: ConfigToken, args: [ConfigToken],
                        at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        let here = at(directive)
        let name = directive.text
        if let first = seen[name] {
            throw ConfigError(location: here, message: "duplicate '\(name)' (first set at \(first.rule))")
        }
        seen[name] = here
        switch name {
        case "tls-versions":
            guard !args.isEmpty else {
                throw ConfigError(location: here, message: "missing argument: expected 'tls-versions VERSION ...' (1.0 1.1 1.2 1.3, GDEnableTLS1.1, GDEnableTLS1.2)")
            }
            for token in args {
                if case .failure(let error) = TLSVersionSet.parse([Substring(token.text)]) {
                    throw ConfigError(location: at(token), message: "\(error)")
                }
            }
            globalWords += args.map { Substring($0.text) }

        case "GDEnableTLS1.1", "GDEnableTLS1.2":
            if let extra = args.first {
                throw ConfigError(location: at(extra), message: "extra argument '\(extra.text)': '\(name)' takes no arguments")
            }
            globalWords.append(Substring(name))

        case "tls-inspect-timeout":
            try Self.expectOne(args, here: here, name: name, usage: "DURATION", at: at)
            guard let duration = ConfigValueParser.duration(args[0].text),
                  duration >= .milliseconds(1), duration <= .seconds(7 * 24 * 3600) else {
                throw ConfigError(location: at(args[0]), message: "bad duration '\(args[0].text)' for '\(name)' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)")
            }
            inspection.timeout = duration

        case "tls-inspect-on-timeout", "tls-inspect-on-overflow":
            try Self.expectOne(args, here: here, name: name, usage: "refuse|pass", at: at)
            guard let action = TLSInspectionAction(rawValue: args[0].text) else {
                throw ConfigError(location: at(args[0]), message: "bad \(name) '\(args[0].text)' (expected refuse or pass)")
            }
            if name == "tls-inspect-on-timeout" { inspection.onTimeout = action } else { inspection.onOverflow = action }

        default:
            preconditionFailure("not a TLS directive: \(name)")
        }
    }

    /// Reads the options after `listen ADDR:PORT tls` and keeps the listener.
    mutating func addListener(_ address: ListenAddress, options: ArraySlice<ConfigToken>, here: SourceLocation,
                              file: String, at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        let parsed = try TLSOptionParser.listener(options, here: here, file: file, at: at)
        listeners.append((TLSListener(address: address, tls: parsed.tls, location: here), parsed.versionWords))
    }

    /// Reads the options after `server HOSTPAT:PORTS` into `rule`, which will stand at
    /// `index` among the rules.
    mutating func serverOptions(_ options: ArraySlice<ConfigToken>, into rule: inout DestinationRule, index: Int,
                                file: String, at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        let parsed = try TLSOptionParser.server(options, file: file, at: at)
        rule.tunnelTLS = parsed.tunnel
        rule.upstreamTLS = parsed.upstream
        if let words = parsed.versionWords { ruleVersionWords[index] = words }
        if let token = parsed.verifyOff {
            warnings.append(ConfigWarning(location: at(token), message: "verify=off for 'server \(rule.host):\(rule.ports)': the relay does not check this server's certificate or host name"))
        }
    }

    /// Settles every version set against the global one and hands back the TLS settings.
    func finish(rules: inout [DestinationRule]) -> Result {
        let global = globalWords.isEmpty ? TLSVersionSet.default : TLSOptionParser.resolve(globalWords, base: .default)
        for index in rules.indices where rules[index].kind == .server {
            rules[index].tunnelTLS.versions = ruleVersionWords[index].map { TLSOptionParser.resolve($0, base: global) } ?? global
        }
        let resolvedListeners = listeners.map { entry in
            var listener = entry.listener
            listener.tls.versions = entry.versionWords.map { TLSOptionParser.resolve($0, base: global) } ?? global
            return listener
        }
        return Result(versions: global, inspection: inspection, listeners: resolvedListeners, warnings: warnings)
    }

    private static func expectOne(_ args: [ConfigToken], here: SourceLocation, name: String, usage: String,
                                  at: (ConfigToken) -> SourceLocation) throws(ConfigError) {
        if args.isEmpty {
            throw ConfigError(location: here, message: "missing argument: expected '\(name) \(usage)'")
        }
        if args.count > 1 {
            throw ConfigError(location: at(args[1]), message: "extra argument '\(args[1].text)': expected '\(name) \(usage)'")
        }
    }
}
