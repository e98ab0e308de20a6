/// Parses the dynrelay config language (see the contract) into a checked `RelayConfig`.
///
/// Pure: files named by `include` are read through the caller's resolver, so tests feed
/// text and `ConfigFileLoader` is the only place that touches the filesystem.
public enum ConfigParser {
    /// Reads the files an `include GLOB` names: `(globPattern, includingFilePath)` →
    /// the `(path, text)` of each match, sorted by path. Throw a `ConfigError` (its
    /// message is kept, its location replaced by the include line's) for unreadable files.
    public typealias IncludeResolver = (String, String) throws -> [(path: String, text: String)]

    /// Deepest include nesting accepted; the main file is depth 0.
    public static let maxIncludeDepth = 8

    /// Parses `text` read from `file`, follows includes, then checks the whole: forwards
    /// must target registered servers, something must be served, TLS versions are settled.
    public static func parse(text: String, file: String,
                             includeResolver: IncludeResolver) throws(ConfigError) -> RelayConfig {
        // The session keeps the resolver only for the duration of this call.
        try withoutActuallyEscaping(includeResolver) { (resolver) throws(ConfigError) -> RelayConfig in
            var session = ConfigParseSession(mainFile: file, resolver: resolver)
            try session.parseFile(text: text, file: file, depth: 0, stack: [])
            return try session.finish()
        }
    }

    /// Parses text that must not include anything (embedded configs, tests).
    public static func parse(text: String, file: String) throws(ConfigError) -> RelayConfig {
        try parse(text: text, file: file) { _, including in
            throw ConfigError(location: SourceLocation(file: including, line: 1, column: 1),
                              message: "include is not available here")
        }
    }
}

/// The mutable state of one parse: values seen so far and where each was first set.
private struct ConfigParseSession {
    let mainFile: String
    let resolver: ConfigParser.IncludeResolver
    var listeners: [ListenAddress] = []
    var boundAddresses: [ListenAddress: SourceLocation] = [:]
    var rules: [DestinationRule] = []
    var forwards: [ForwardDirective] = []
    var stateDir: String?
    var loops: Int?
    var limits = RelayLimits()
    var timeouts = RelayTimeouts()
    var auditSync = AuditSync.normal
    var instance: String?
    var auth = AuthDirectiveParser()
    var tls = TLSDirectiveParser()
    var listenerLocations: [SourceLocation] = []
    var firstSet: [String: SourceLocation] = [:]
    var sourceFiles: [String] = []

    init(mainFile: String, resolver: @escaping ConfigParser.IncludeResolver) {
        self.mainFile = mainFile
        self.resolver = resolver
    }

    /// `stack` holds the lexical keys of the files currently being parsed, outermost first.
    mutating func parseFile(text: String, file: String, depth: Int, stack: [(key: String, path: String)]) throws(ConfigError) {
        sourceFiles.append(file)
        let stack = stack + [(key: PathLexical.normalize(file), path: file)]
        for line in ConfigLexer.lines(of: text) {
            try parseLine(line, file: file, depth: depth, stack: stack)
        }
    }

    private mutating func parseLine(_ line: ConfigLine, file: String, depth: Int,
                                    stack: [(key: String, path: String)]) throws(ConfigError) {
        func at(_ token: ConfigToken) -> SourceLocation {
            SourceLocation(file: file, line: line.number, column: token.column)
        }
        for token in line.tokens where token.text.unicodeScalars.contains(where: Self.isControl) {
            throw ConfigError(location: at(token), message: "invalid control character")
        }
        guard let directive = line.tokens.first else { return }
        let args = Array(line.tokens.dropFirst())
        let here = at(directive)

        /// Exactly `count` arguments, else a usage error at the directive or the extra token.
        func expect(_ count: Int, usage: String) throws(ConfigError) {
            if args.count < count {
                throw ConfigError(location: here, message: "missing argument: expected '\(directive.text) \(usage)'")
            }
            if args.count > count {
                throw ConfigError(location: at(args[count]),
                                  message: "extra argument '\(args[count].text)': expected '\(directive.text) \(usage)'")
            }
        }

        switch directive.text {
        case "listen" where args.count >= 2 && args[1].text == "tls":
            let address = try listenAddress(args[0], at(args[0]))
            try tls.addListener(address, options: args[2...], here: here, file: file, at: at)
            try bind(address, here)

        case "listen":
            if let option = TLSOptionParser.firstListenerOption(in: args.dropFirst()) {
                throw ConfigError(location: at(option), message: "'\(option.text)' needs 'tls' after the address: expected '\(TLSOptionParser.listenerUsage)'")
            }
            try expect(1, usage: "ADDR:PORT")
            let address = try listenAddress(args[0], at(args[0]))
            try bind(address, here)
            listeners.append(address)
            listenerLocations.append(here)

        case "server", "deny":
            let kind: DestinationRule.Kind = directive.text == "server" ? .server : .deny
            // A server's further words are its TLS options; a deny takes none.
            if kind == .deny || args.isEmpty {
                try expect(1, usage: kind == .server ? "HOSTPAT:PORTS" : "HOSTPAT[:PORTS]")
            }
            let location = at(args[0])
            guard let split = ConfigValueParser.splitHostPort(args[0].text) else {
                throw ConfigError(location: location, message: "bad host pattern '\(args[0].text)' (IPv6 must be in brackets: [2001:db8::1]:443)")
            }
            let host: HostPattern
            switch ConfigValueParser.hostPattern(split.host, bracketed: split.bracketed) {
            case .success(let pattern): host = pattern
            case .failure(let error): throw ConfigError(location: location, message: error.message)
            }
            var ports = PortRange.all
            if let portText = split.port {
                switch ConfigValueParser.ports(portText) {
                case .success(let range): ports = range
                case .failure(let error): throw ConfigError(location: location, message: error.message)
                }
            } else if kind == .server {
                throw ConfigError(location: location, message: "missing ports: expected 'server HOSTPAT:PORTS' (PORTS: 443, 8080-8089 or *)")
            }
            var rule = DestinationRule(kind: kind, host: host, ports: ports, location: here)
            if kind == .server {
                try tls.serverOptions(args.dropFirst(), into: &rule, index: rules.count, file: file, at: at)
            }
            rules.append(rule)

        case "forward":
            try expect(3, usage: "LISTEN_ADDR:PORT to HOST:PORT")
            let listen = try listenAddress(args[0], at(args[0]))
            guard args[1].text == "to" else {
                throw ConfigError(location: at(args[1]), message: "expected 'to', found '\(args[1].text)'")
            }
            let (host, port) = try forwardTarget(args[2], at(args[2]))
            try bind(listen, here)
            forwards.append(ForwardDirective(listen: listen, host: host, port: port, location: here))

        case "include":
            try expect(1, usage: "GLOB")
            try include(args[0], at(args[0]), file: file, depth: depth, stack: stack)

        case "state-dir":
            try expect(1, usage: "PATH")
            try setOnce(directive.text, here)
            stateDir = args[0].text

        case "loops":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            loops = try count(args[0], at(args[0]), for: directive.text, range: 1...1024)

        case "max-request-head":
            try expect(1, usage: "SIZE")
            try setOnce(directive.text, here)
            guard let size = ConfigValueParser.size(args[0].text), (1024...16 * 1024 * 1024).contains(size) else {
                throw ConfigError(location: at(args[0]), message: "bad size '\(args[0].text)' for 'max-request-head' (expected 1KiB-16MiB as 32768, 32k, 32KiB, 1m, 1MiB)")
            }
            limits.maxRequestHead = size

        case "max-headers":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            limits.maxHeaders = try count(args[0], at(args[0]), for: directive.text, range: 1...10_000)

        case "max-connections":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            limits.maxConnections = try count(args[0], at(args[0]), for: directive.text, range: 1...1_000_000)

        case "max-connections-per-source":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            limits.maxConnectionsPerSource = try count(args[0], at(args[0]), for: directive.text, range: 1...1_000_000)

        case "max-tunnels-per-principal":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            limits.maxTunnelsPerPrincipal = try count(args[0], at(args[0]), for: directive.text, range: 1...1_000_000)

        case "audit-backlog":
            try expect(1, usage: "N")
            try setOnce(directive.text, here)
            limits.maxAuditBacklog = try count(args[0], at(args[0]), for: directive.text, range: 10...10_000_000)

        case "header-timeout", "connect-timeout", "idle-timeout", "drain-timeout", "stall-timeout",
             "refusal-summary-interval":
            try expect(1, usage: "DURATION")
            try setOnce(directive.text, here)
            guard let duration = ConfigValueParser.duration(args[0].text),
                  duration >= .milliseconds(1), duration <= .seconds(7 * 24 * 3600) else {
                throw ConfigError(location: at(args[0]), message: "bad duration '\(args[0].text)' for '\(directive.text)' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)")
            }
            switch directive.text {
            case "header-timeout": timeouts.header = duration
            case "connect-timeout": timeouts.connect = duration
            case "idle-timeout": timeouts.idle = duration
            case "stall-timeout": timeouts.stall = duration
            case "refusal-summary-interval": timeouts.refusalSummary = duration
            default: timeouts.drain = duration
            }

        case "instance":
            try expect(1, usage: "NAME")
            try setOnce(directive.text, here)
            guard RelayFacts.isValidInstance(args[0].text) else {
                throw ConfigError(location: at(args[0]), message: "bad instance '\(args[0].text)' (expected 1-64 of A-Z a-z 0-9 . _ -)")
            }
            instance = args[0].text

        case "audit-sync":
            try expect(1, usage: "full|normal")
            try setOnce(directive.text, here)
            guard let sync = AuditSync(rawValue: args[0].text) else {
                throw ConfigError(location: at(args[0]), message: "bad audit-sync '\(args[0].text)' (expected full or normal)")
            }
            auditSync = sync

        case let name where AuthDirectiveParser.directives.contains(name):
            try auth.parse(directive: directive, args: args, at: at)

        case let name where TLSDirectiveParser.directives.contains(name):
            try tls.parse(directive: directive, args: args, at: at)

        default:
            throw ConfigError(location: here, message: "unknown directive '\(directive.text)'")
        }
    }

    private mutating func include(_ token: ConfigToken, _ location: SourceLocation, file: String, depth: Int,
                                  stack: [(key: String, path: String)]) throws(ConfigError) {
        if depth + 1 > ConfigParser.maxIncludeDepth {
            throw ConfigError(location: location, message: "include nesting deeper than \(ConfigParser.maxIncludeDepth)")
        }
        let matches: [(path: String, text: String)]
        do {
            matches = try resolver(token.text, file)
        } catch let error as ConfigError {
            throw ConfigError(location: location, message: error.message)
        } catch {
            throw ConfigError(location: location, message: "cannot include '\(token.text)': \(error)")
        }
        for match in matches {
            let key = PathLexical.normalize(match.path)
            if let start = stack.firstIndex(where: { $0.key == key }) {
                let chain = stack[start...].map(\.path) + [match.path]
                throw ConfigError(location: location, message: "include cycle: \(chain.joined(separator: " -> "))")
            }
            try parseFile(text: match.text, file: match.path, depth: depth + 1, stack: stack)
        }
    }

    private mutating func setOnce(_ directive: String, _ location: SourceLocation) throws(ConfigError) {
        if let first = firstSet[directive] {
            throw ConfigError(location: location, message: "duplicate '\(directive)' (first set at \(first.rule))")
        }
        firstSet[directive] = location
    }

    private mutating func bind(_ address: ListenAddress, _ location: SourceLocation) throws(ConfigError) {
        // Several ephemeral listeners on one address are distinct sockets.
        guard address.port != 0 else { return }
        if let first = boundAddresses[address] {
            throw ConfigError(location: location, message: "duplicate listen address \(address) (first at \(first.rule))")
        }
        boundAddresses[address] = location
    }

    private func count(_ token: ConfigToken, _ location: SourceLocation, for directive: String,
                       range: ClosedRange<Int>) throws(ConfigError) -> Int {
        try ConfigValueParser.count(token.text, in: range, for: directive, at: location)
    }

    private func listenAddress(_ token: ConfigToken, _ location: SourceLocation) throws(ConfigError) -> ListenAddress {
        let usage = "bad listen address '\(token.text)' (expected IPv4:PORT or [IPv6]:PORT)"
        guard let split = ConfigValueParser.splitHostPort(token.text), let portText = split.port else {
            throw ConfigError(location: location, message: usage)
        }
        let host: IPAddress
        if split.bracketed, let v6 = IPv6Address(text: split.host) {
            host = .v6(v6)
        } else if !split.bracketed, let v4 = IPv4Address(strict: split.host) {
            host = .v4(v4)
        } else {
            throw ConfigError(location: location, message: usage)
        }
        guard let port = ConfigValueParser.port(portText, minimum: 0) else {
            throw ConfigError(location: location, message: "bad port '\(portText)' in '\(token.text)' (expected 0-65535, 0 = ephemeral)")
        }
        return ListenAddress(host: host, port: port)
    }

    private func forwardTarget(_ token: ConfigToken, _ location: SourceLocation) throws(ConfigError) -> (Host, UInt16) {
        guard let split = ConfigValueParser.splitHostPort(token.text), let portText = split.port else {
            throw ConfigError(location: location, message: "bad forward target '\(token.text)' (expected HOST:PORT)")
        }
        guard let port = ConfigValueParser.port(portText) else {
            throw ConfigError(location: location, message: "bad port '\(portText)' in '\(token.text)' (expected 1-65535)")
        }
        switch HostNormalizer.normalize(String(split.host), bracketed: split.bracketed) {
        case .success(let host): return (host, port)
        case .failure(let error):
            throw ConfigError(location: location, message: "bad forward target '\(token.text)' (\(error.detail))")
        }
    }

    /// Whole-config checks that no single line can make.
    func finish() throws(ConfigError) -> RelayConfig {
        let registry = Registry(rules: rules)
        for forward in forwards {
            var decision = registry.decide(host: forward.host, port: forward.port)
            // An IP-literal target skips resolution, so the post-resolution check applies now
            // (the relay's own addresses and listeners are checked again when it runs).
            if case .allow(let rule) = decision, let address = forward.host.address {
                decision = registry.checkResolved(address: address, port: forward.port, allowRule: rule, localHost: nil)
            }
            switch decision {
            case .allow:
                continue
            case .deny(let rule?, _):
                throw ConfigError(location: forward.location, message: "forward target \(forward.host):\(forward.port) denied by rule \(rule)")
            case .deny(nil, .guardedAddress):
                throw ConfigError(location: forward.location, message: "forward target not registered (\(forward.host) is a guarded address: register it by address)")
            case .deny(nil, _):
                throw ConfigError(location: forward.location, message: "forward target not registered")
            }
        }
        let authConfig = try auth.finish(mainFile: mainFile)
        var resolvedRules = rules
        let tlsConfig = tls.finish(rules: &resolvedRules)
        if let clientCertificate = authConfig.clientCertificate, !tls.anyListenerAsksForClientCertificates {
            throw ConfigError(location: clientCertificate.location, message: "auth client-cert: no 'listen ... tls' has client-ca=FILE, so nothing can present a certificate")
        }
        // Default deny for people too: an open proxy on a routable address is never an accident we allow.
        let schemeOrNone = !authConfig.schemes.isEmpty || authConfig.explicitlyNone
        for (address, location) in zip(listeners, listenerLocations) where !address.host.isLoopback && !schemeOrNone {
            if authConfig.acceptsClientCertificate {
                throw ConfigError(location: location, message: "listen \(address) is not loopback and no client certificate reaches a plain listener: configure an 'auth SCHEME' a 407 can ask for")
            }
            throw ConfigError(location: location, message: "listen \(address) is not loopback: configure 'auth SCHEME', or say 'auth none' on purpose")
        }
        for listener in tlsConfig.listeners where !listener.address.host.isLoopback && !schemeOrNone {
            // A certificate authenticates only when the handshake cannot succeed without one.
            if authConfig.acceptsClientCertificate && listener.tls.requireClientCertificate { continue }
            throw ConfigError(location: listener.location, message: "listen \(listener.address) tls is not loopback: configure 'auth SCHEME' (or 'auth client-cert' with require-client-cert), or say 'auth none' on purpose")
        }
        if listeners.isEmpty && tlsConfig.listeners.isEmpty && forwards.isEmpty {
            throw ConfigError(location: SourceLocation(file: mainFile, line: 1, column: 1),
                              message: "no 'listen' and no 'forward': nothing to serve")
        }
        var config = RelayConfig(listeners: listeners, stateDir: stateDir ?? RelayConfig.defaultStateDir, loops: loops,
                                 rules: resolvedRules, forwards: forwards, limits: limits, timeouts: timeouts,
                                 auditSync: auditSync, auth: authConfig, sourceFiles: sourceFiles,
                                 tlsListeners: tlsConfig.listeners, tlsVersions: tlsConfig.versions,
                                 tlsInspection: tlsConfig.inspection, warnings: tlsConfig.warnings)
        config.instance = instance
        return config
    }

    /// C0 controls other than tab, and DEL: invisible in an editor, and NUL would cut a
    /// path short when it reaches the C library.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7f
    }
}
