import RelayClient
import RelayCore

/// What a `dynrelay-client` command line asks for, parsed and checked before anything runs.
struct ClientToolInvocation: Equatable {
    enum Command: Equatable {
        case fetch(url: String)
        case tunnel(host: String, port: UInt16)
        case status
        case config
    }

    var command: Command
    /// `--relay` entries (`URL` or `URL;priority=N`) in the order given, else `DYNRELAY_RELAYS`.
    var relays: [RelayEndpoint]
    var proxyUser: String?
    var serverUser: String?
    var passwordFromStdin = false
    var method: String?
    var headers: [String] = []
    var dataFile: String?
    var cookieJar: String?
    var caFile: String?
    var relayCAFile: String?
    var tlsVersions: TLSVersionSet?
    var outputFile: String?
    var includeHeaders = false
    var endToEndTLS = false
}

/// A command line `dynrelay-client` refuses: exit 2 with this message and the usage.
struct ClientToolUsageError: Error, Equatable {
    let message: String
}

extension ClientToolInvocation {
    static let usage = """
    usage: dynrelay-client fetch URL [--relay URL]... [--proxy-user NAME] [--server-user NAME] [--password-stdin]
                                     [-X METHOD] [-H 'Name: value']... [--data-binary @FILE] [--cookie-jar FILE]
                                     [--cacert FILE] [--relay-cacert FILE] [--tls-versions LIST] [-o FILE] [-i]
           dynrelay-client tunnel HOST:PORT [--relay URL]... [--proxy-user NAME] [--password-stdin] [--tls]
                                     [--cacert FILE] [--relay-cacert FILE] [--tls-versions LIST]
           dynrelay-client status [--relay URL]... [--relay-cacert FILE]
           dynrelay-client config [--relay URL]... [--proxy-user NAME] [--password-stdin] [--relay-cacert FILE]
    --relay may repeat (priority order, or URL;priority=N); without it, DYNRELAY_RELAYS (comma-separated).
    --password-stdin reads the proxy password on the first line and the server password on the second.
    Without a password, Negotiate uses the Kerberos credential cache (KRB5CCNAME).
    """

    /// Parses `arguments` (without the program name); `environment` supplies `DYNRELAY_RELAYS`.
    static func parse(_ arguments: [String], environment: [String: String]) throws(ClientToolUsageError) -> ClientToolInvocation {
        guard let verb = arguments.first else { throw ClientToolUsageError(message: "no command") }
        var rest = Array(arguments.dropFirst())
        let command: Command
        switch verb {
        case "fetch":
            guard let url = takePositional(&rest) else { throw ClientToolUsageError(message: "fetch needs a URL") }
            do throws(ClientURLError) {
                _ = try ClientURL(parsing: url)
            } catch {
                throw ClientToolUsageError(message: "fetch \(url): \(error)")
            }
            command = .fetch(url: url)
        case "tunnel":
            guard let target = takePositional(&rest), let (host, port) = hostPort(target) else {
                throw ClientToolUsageError(message: "tunnel needs HOST:PORT")
            }
            command = .tunnel(host: host, port: port)
        case "status": command = .status
        case "config": command = .config
        default: throw ClientToolUsageError(message: "unknown command \(verb)")
        }
        var invocation = ClientToolInvocation(command: command, relays: [])
        var relayEntries: [String] = []
        var index = 0
        func value(_ flag: String) throws(ClientToolUsageError) -> String {
            index += 1
            guard index < rest.count else { throw ClientToolUsageError(message: "\(flag) needs a value") }
            return rest[index]
        }
        while index < rest.count {
            let flag = rest[index]
            guard invocation.allows(flag) else { throw ClientToolUsageError(message: "\(verb) does not take \(flag)") }
            switch flag {
            case "--relay": relayEntries.append(try value(flag))
            case "--proxy-user": invocation.proxyUser = try value(flag)
            case "--server-user": invocation.serverUser = try value(flag)
            case "--password-stdin": invocation.passwordFromStdin = true
            case "-X": invocation.method = try value(flag)
            case "-H":
                let header = try value(flag)
                guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                    throw ClientToolUsageError(message: "-H wants 'Name: value', not \(header)")
                }
                invocation.headers.append(header)
            case "--data-binary":
                let data = try value(flag)
                guard data.hasPrefix("@"), data.count > 1 else { throw ClientToolUsageError(message: "--data-binary wants @FILE") }
                invocation.dataFile = String(data.dropFirst())
            case "--cookie-jar": invocation.cookieJar = try value(flag)
            case "--cacert": invocation.caFile = try value(flag)
            case "--relay-cacert": invocation.relayCAFile = try value(flag)
            case "--tls-versions":
                let list = try value(flag)
                switch TLSVersionSet.parse(list.split(separator: ",")) {
                case .success(let versions): invocation.tlsVersions = versions
                case .failure(let error): throw ClientToolUsageError(message: "--tls-versions \(list): \(error)")
                }
            case "-o": invocation.outputFile = try value(flag)
            case "-i": invocation.includeHeaders = true
            case "--tls": invocation.endToEndTLS = true
            default: throw ClientToolUsageError(message: "unknown option \(flag)")
            }
            index += 1
        }
        do throws(RelayListError) {
            if !relayEntries.isEmpty {
                invocation.relays = try RelayList.parse(relayEntries)
            } else if let fromEnvironment = environment[RelayList.environmentVariable], !fromEnvironment.isEmpty {
                invocation.relays = try RelayList.parse(environmentValue: fromEnvironment)
            }
        } catch {
            throw ClientToolUsageError(message: "relay list: \(error)")
        }
        guard !invocation.relays.isEmpty else {
            throw ClientToolUsageError(message: "no relay: give --relay URL or set \(RelayList.environmentVariable)")
        }
        return invocation
    }

    /// The options each command takes; anything else is a usage error rather than ignored.
    private func allows(_ flag: String) -> Bool {
        let common = ["--relay", "--relay-cacert"]
        let auth = ["--proxy-user", "--password-stdin"]
        switch command {
        case .fetch:
            return common.contains(flag) || auth.contains(flag)
                || ["--server-user", "-X", "-H", "--data-binary", "--cookie-jar", "--cacert", "--tls-versions", "-o", "-i"].contains(flag)
        case .tunnel:
            return common.contains(flag) || auth.contains(flag) || ["--tls", "--cacert", "--tls-versions"].contains(flag)
        case .status:
            return common.contains(flag)
        case .config:
            return common.contains(flag) || auth.contains(flag)
        }
    }

    private static func takePositional(_ arguments: inout [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        arguments.removeFirst()
        return first
    }

    /// `host:port`, `[v6]:port`; nil when either part is missing or the port is not 1–65535.
    static func hostPort(_ text: String) -> (String, UInt16)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        return (host, port)
    }
}
