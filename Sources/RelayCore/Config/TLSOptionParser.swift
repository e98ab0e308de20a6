/// The options a `listen … tls` or `server` line carries:
///
/// ```
/// listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]
/// server HOSTPAT:PORTS [tls] [ca=FILE] [verify=on|off] [sni=match|optional|any]
///                      [tunnel-tls=any|required] [tls-versions=LIST]
/// ```
///
/// Unknown and repeated options are errors, as everywhere in the language. A relative FILE
/// is taken from the directory of the file that names it, worked out on the string alone
/// (the parser reads no disk; the I/O layer loads the files). A version LIST is kept as its
/// words until the global set is known, because `GDEnable` names in it add to that set.
enum TLSOptionParser {
    /// One word after a line's fixed arguments: a flag (`tls`) or `key=value`.
    struct Option {
        var key: String
        /// nil for a flag.
        var value: String?
        var token: ConfigToken
    }

    /// What a `listen … tls` line asked for; `versionWords` nil when it names no versions.
    struct Listener {
        var tls: ListenerTLSConfig
        var versionWords: [Substring]?
    }

    /// What a `server` line asked for; `versionWords` nil when it names no versions.
    struct Server {
        var tunnel = TunnelTLSPolicy()
        var upstream = UpstreamTLSPolicy()
        var versionWords: [Substring]?
        /// The `verify=off` token, which the configuration reports as a warning.
        var verifyOff: ConfigToken?
    }

    static let listenerUsage = "listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]"
    static let serverUsage = "server HOSTPAT:PORTS"

    private static let listenerKeys: Set<String> = ["cert", "key", "client-ca", "tls-versions"]
    private static let listenerFlags: Set<String> = ["require-client-cert"]
    private static let serverKeys: Set<String> = ["ca", "verify", "sni", "tunnel-tls", "tls-versions"]
    private static let serverFlags: Set<String> = ["tls"]

    /// The first word of a plain `listen` line that only `listen … tls` takes, so the line
    /// can be told what it lacks instead of "extra argument".
    static func firstListenerOption(in tokens: ArraySlice<ConfigToken>) -> ConfigToken? {
        tokens.first { token in
            guard let equals = token.text.firstIndex(of: "=") else { return listenerFlags.contains(token.text) }
            return listenerKeys.contains(String(token.text[..<equals]))
        }
    }

    /// The words after `listen ADDR:PORT tls`; `here` is the directive's location, where a
    /// missing option is reported.
    static func listener(_ tokens: ArraySlice<ConfigToken>, here: SourceLocation, file: String,
                         at: (ConfigToken) -> SourceLocation) throws(ConfigError) -> Listener {
        let options = try split(tokens, flags: listenerFlags, keys: listenerKeys,
                                directive: "listen ... tls", at: at) { token throws(ConfigError) in
            if token.text == "tls" {
                throw ConfigError(location: at(token), message: "duplicate option 'tls'")
            }
            throw ConfigError(location: at(token), message: "unknown option '\(token.text)' for 'listen ... tls'")
        }
        var cert: String?
        var key: String?
        var clientCA: String?
        var require: ConfigToken?
        var versionWords: [Substring]?
        for option in options {
            switch option.key {
            case "cert": cert = path(option.value!, relativeTo: file)
            case "key": key = path(option.value!, relativeTo: file)
            case "client-ca": clientCA = path(option.value!, relativeTo: file)
            case "require-client-cert": require = option.token
            default: versionWords = try versionList(option.value!, option.token, at: at)
            }
        }
        guard let cert else {
            throw ConfigError(location: here, message: "missing cert=FILE: expected '\(listenerUsage)'")
        }
        guard let key else {
            throw ConfigError(location: here, message: "missing key=FILE: expected '\(listenerUsage)'")
        }
        if let require, clientCA == nil {
            throw ConfigError(location: at(require), message: "require-client-cert needs client-ca=FILE (the CA client certificates are checked against)")
        }
        let tls = ListenerTLSConfig(certificateFile: cert, keyFile: key, clientCAFile: clientCA,
                                    requireClientCertificate: require != nil)
        return Listener(tls: tls, versionWords: versionWords)
    }

    /// The words after `server HOSTPAT:PORTS`.
    static func server(_ tokens: ArraySlice<ConfigToken>, file: String,
                       at: (ConfigToken) -> SourceLocation) throws(ConfigError) -> Server {
        let options = try split(tokens, flags: serverFlags, keys: serverKeys, directive: "server", at: at) { token throws(ConfigError) in
            // A bare word is most likely a second destination: say the line takes one.
            throw ConfigError(location: at(token), message: "extra argument '\(token.text)': expected '\(serverUsage)'")
        }
        var server = Server()
        for option in options {
            let value = option.value ?? ""
            switch option.key {
            case "tls":
                server.upstream.always = true
            case "ca":
                server.upstream.caFile = path(value, relativeTo: file)
            case "verify":
                switch value {
                case "on": server.upstream.verify = true
                case "off": server.upstream.verify = false; server.verifyOff = option.token
                default: throw ConfigError(location: at(option.token), message: "bad verify '\(value)' (expected on or off)")
                }
            case "sni":
                guard let rule = TunnelTLSPolicy.SNIRule(rawValue: value) else {
                    throw ConfigError(location: at(option.token), message: "bad sni '\(value)' (expected match, optional or any)")
                }
                server.tunnel.sni = rule
            case "tunnel-tls":
                guard let requirement = TunnelTLSPolicy.Requirement(rawValue: value) else {
                    throw ConfigError(location: at(option.token), message: "bad tunnel-tls '\(value)' (expected any or required)")
                }
                server.tunnel.requirement = requirement
            default:
                server.versionWords = try versionList(value, option.token, at: at)
            }
        }
        return server
    }

    /// The set a version list stands for: the versions it names, plus what its `GDEnable`
    /// names add; a list naming no version adds to `base` (the global set).
    static func resolve(_ words: [Substring], base: TLSVersionSet) -> TLSVersionSet {
        let namesAVersion = words.contains { word in TLSVersion.allCases.contains { $0.number == word } }
        let full = namesAVersion ? words : base.versions.map { Substring($0.number) } + words
        // Every list was checked when it was read, and `base` is never empty.
        guard case .success(let set) = TLSVersionSet.parse(full) else { preconditionFailure("unchecked version list \(full)") }
        return set
    }

    /// `cert=`, `ca=` and the like are named from the configuration file's point of view.
    private static func path(_ value: String, relativeTo file: String) -> String {
        PathLexical.resolve(value, relativeTo: file)
    }

    private static func versionList(_ value: String, _ token: ConfigToken,
                                    at: (ConfigToken) -> SourceLocation) throws(ConfigError) -> [Substring] {
        let words = value.split(separator: ",", omittingEmptySubsequences: false)
        if case .failure(let error) = TLSVersionSet.parse(words) {
            throw ConfigError(location: at(token), message: "bad tls-versions '\(value)': \(error)")
        }
        return words
    }

    /// Splits `tokens` into options, refusing repeats, empty values, values on flags and
    /// unknown keys; a bare word that is no flag goes to `bareWord`, which throws.
    private static func split(_ tokens: ArraySlice<ConfigToken>, flags: Set<String>, keys: Set<String>,
                              directive: String, at: (ConfigToken) -> SourceLocation,
                              bareWord: (ConfigToken) throws(ConfigError) -> Void) throws(ConfigError) -> [Option] {
        var options: [Option] = []
        for token in tokens {
            let option: Option
            if let equals = token.text.firstIndex(of: "=") {
                let key = String(token.text[..<equals])
                let value = String(token.text[token.text.index(after: equals)...])
                if flags.contains(key) {
                    throw ConfigError(location: at(token), message: "'\(key)' takes no value")
                }
                guard keys.contains(key) else {
                    throw ConfigError(location: at(token), message: "unknown option '\(key)' for '\(directive)'")
                }
                guard !value.isEmpty else {
                    throw ConfigError(location: at(token), message: "expected key=value, found '\(token.text)'")
                }
                option = Option(key: key, value: value, token: token)
            } else if flags.contains(token.text) {
                option = Option(key: token.text, value: nil, token: token)
            } else {
                try bareWord(token)
                continue
            }
            if options.contains(where: { $0.key == option.key }) {
                throw ConfigError(location: at(token), message: "duplicate option '\(option.key)'")
            }
            options.append(option)
        }
        return options
    }
}
