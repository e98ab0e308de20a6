import Testing
@testable import RelayCore

/// Every error kind, asserted to the exact `file:line:col: message` ops will read.
@Suite("ConfigParser errors")
struct ConfigErrorTests {
    static let listen = "listen 127.0.0.1:3128\n"

    @Test("structure", arguments: [
        ("frobnicate 1", "main.conf:1:1: unknown directive 'frobnicate'"),
        ("LISTEN 127.0.0.1:1", "main.conf:1:1: unknown directive 'LISTEN'"),
        ("listen", "main.conf:1:1: missing argument: expected 'listen ADDR:PORT'"),
        ("listen 127.0.0.1:1 127.0.0.1:2", "main.conf:1:20: extra argument '127.0.0.1:2': expected 'listen ADDR:PORT'"),
        (listen + "  deny", "main.conf:2:3: missing argument: expected 'deny HOSTPAT[:PORTS]'"),
        (listen + "server a.example:1 b.example:2", "main.conf:2:20: extra argument 'b.example:2': expected 'server HOSTPAT:PORTS'"),
        (listen + "state-dir", "main.conf:2:1: missing argument: expected 'state-dir PATH'"),
        (listen + "include", "main.conf:2:1: missing argument: expected 'include GLOB'"),
        (listen + "audit-sync full normal", "main.conf:2:17: extra argument 'normal': expected 'audit-sync full|normal'"),
        ("listen 127.0.0.1:1\u{0}", "main.conf:1:8: invalid control character"),
        ("listen\u{7f} 127.0.0.1:1", "main.conf:1:1: invalid control character"),
        ("", "main.conf:1:1: no 'listen' and no 'forward': nothing to serve"),
        ("# nothing\nserver a.example:1", "main.conf:1:1: no 'listen' and no 'forward': nothing to serve"),
    ])
    func structure(text: String, expected: String) {
        #expect(configError(text) == expected)
    }

    @Test("listen addresses", arguments: [
        ("listen localhost:3128", "main.conf:1:8: bad listen address 'localhost:3128' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen 127.0.0.1", "main.conf:1:8: bad listen address '127.0.0.1' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen ::1:3128", "main.conf:1:8: bad listen address '::1:3128' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen 127.1:3128", "main.conf:1:8: bad listen address '127.1:3128' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen [::1]3128", "main.conf:1:8: bad listen address '[::1]3128' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen 127.0.0.1:65536", "main.conf:1:8: bad port '65536' in '127.0.0.1:65536' (expected 0-65535, 0 = ephemeral)"),
        ("listen [::1]:-1", "main.conf:1:8: bad port '-1' in '[::1]:-1' (expected 0-65535, 0 = ephemeral)"),
        ("listen 127.0.0.1:3128\nlisten 127.0.0.1:3128", "main.conf:2:1: duplicate listen address 127.0.0.1:3128 (first at main.conf:1)"),
        ("listen [::1]:80\nserver a.example:1\nforward [0::1]:80 to a.example:1", "main.conf:3:1: duplicate listen address [::1]:80 (first at main.conf:1)"),
    ])
    func listenErrors(text: String, expected: String) {
        #expect(configError(text) == expected)
    }

    @Test("server and deny rules", arguments: [
        ("server app.example", "main.conf:2:8: missing ports: expected 'server HOSTPAT:PORTS' (PORTS: 443, 8080-8089 or *)"),
        ("server app.example:0", "main.conf:2:8: bad port '0' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("server app.example:65536", "main.conf:2:8: bad port '65536' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("deny app.example:", "main.conf:2:6: bad port '' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("server app.example:0443", "main.conf:2:8: bad port '0443' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("server app.example:9-8", "main.conf:2:8: bad port range '9-8' (low port above high port)"),
        ("server app.example:0-8", "main.conf:2:8: bad port range '0-8' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("server app.example:1-2-3", "main.conf:2:8: bad port range '1-2-3' (expected 443, 8080-8089 or *, ports 1-65535)"),
        ("server 10.0.0.0/33:1", "main.conf:2:8: bad CIDR '10.0.0.0/33' (prefix must be 0-32)"),
        ("server 10.0.0.0/:1", "main.conf:2:8: bad CIDR '10.0.0.0/' (prefix must be 0-32)"),
        ("server 10.0.0.1/8:1", "main.conf:2:8: bad CIDR '10.0.0.1/8' (host bits set; did you mean 10.0.0.0/8?)"),
        ("server 010.0.0.0/8:1", "main.conf:2:8: bad CIDR '010.0.0.0/8' (expected a canonical IPv4 address/prefix)"),
        ("server [2001:db8::1/32]:1", "main.conf:2:8: bad CIDR '[2001:db8::1/32]' (host bits set; did you mean [2001:db8::/32]?)"),
        ("server [2001:db8::/129]:1", "main.conf:2:8: bad CIDR '[2001:db8::/129]' (prefix must be 0-128)"),
        ("server [fe80::1%eth0]:443", "main.conf:2:8: bad IPv6 address '[fe80::1%eth0]'"),
        ("server [app.example]:443", "main.conf:2:8: bad IPv6 address '[app.example]'"),
        ("server 2001:db8::1:443", "main.conf:2:8: bad host pattern '2001:db8::1:443' (IPv6 must be in brackets: [2001:db8::1]:443)"),
        ("server [::1:443", "main.conf:2:8: bad host pattern '[::1:443' (IPv6 must be in brackets: [2001:db8::1]:443)"),
        ("server 0177.0.0.1:1", "main.conf:2:8: bad host pattern '0177.0.0.1' ('0177.0.0.1' looks like an IP address but is not a canonical dotted quad)"),
        ("server 2130706433:1", "main.conf:2:8: bad host pattern '2130706433' ('2130706433' looks like an IP address but is not a canonical dotted quad)"),
        ("server *.corp.example:443", "main.conf:2:8: bad host pattern '*.corp.example' (write '.corp.example' for a domain and its subdomains)"),
        ("server .10.0.0.1:443", "main.conf:2:8: bad host pattern '.10.0.0.1' (a domain must be a name)"),
        ("server bad-.example:1", "main.conf:2:8: bad host pattern 'bad-.example' (label 'bad-' starts or ends with '-')"),
        ("server a..example:1", "main.conf:2:8: bad host pattern 'a..example' (empty label in 'a..example')"),
        ("server ..example:1", "main.conf:2:8: bad host pattern '..example' (empty label in '.example')"),
        ("server bücher.example:1", "main.conf:2:8: bad host pattern 'bücher.example' (non-ASCII host (IDN must be sent as punycode xn--))"),
        ("server user@app.example:1", "main.conf:2:8: bad host pattern 'user@app.example' (userinfo in host)"),
        ("server app%2eexample:1", "main.conf:2:8: bad host pattern 'app%2eexample' (percent-encoding in host)"),
    ])
    func ruleErrors(text: String, expected: String) {
        #expect(configError(Self.listen + text) == expected)
    }

    @Test("single-valued directives and their values", arguments: [
        ("state-dir /a\nstate-dir /b", "main.conf:3:1: duplicate 'state-dir' (first set at main.conf:2)"),
        ("loops 2\n\nloops 2", "main.conf:4:1: duplicate 'loops' (first set at main.conf:2)"),
        ("max-headers 5\nmax-headers 5", "main.conf:3:1: duplicate 'max-headers' (first set at main.conf:2)"),
        ("max-request-head 1m\nmax-request-head 1m", "main.conf:3:1: duplicate 'max-request-head' (first set at main.conf:2)"),
        ("max-connections 5\nmax-connections 6", "main.conf:3:1: duplicate 'max-connections' (first set at main.conf:2)"),
        ("idle-timeout 5\nidle-timeout 6", "main.conf:3:1: duplicate 'idle-timeout' (first set at main.conf:2)"),
        ("header-timeout 5\nheader-timeout 6", "main.conf:3:1: duplicate 'header-timeout' (first set at main.conf:2)"),
        ("connect-timeout 5\nconnect-timeout 6", "main.conf:3:1: duplicate 'connect-timeout' (first set at main.conf:2)"),
        ("drain-timeout 5\ndrain-timeout 6", "main.conf:3:1: duplicate 'drain-timeout' (first set at main.conf:2)"),
        ("audit-sync full\naudit-sync full", "main.conf:3:1: duplicate 'audit-sync' (first set at main.conf:2)"),
        ("loops 0", "main.conf:2:7: bad number '0' for 'loops' (expected 1-1024)"),
        ("loops -1", "main.conf:2:7: bad number '-1' for 'loops' (expected 1-1024)"),
        ("loops 04", "main.conf:2:7: bad number '04' for 'loops' (expected 1-1024)"),
        ("loops four", "main.conf:2:7: bad number 'four' for 'loops' (expected 1-1024)"),
        ("max-headers 0", "main.conf:2:13: bad number '0' for 'max-headers' (expected 1-10000)"),
        ("audit-backlog 9", "main.conf:2:15: bad number '9' for 'audit-backlog' (expected 10-10000000)"),
        ("max-tunnels-per-principal 0", "main.conf:2:27: bad number '0' for 'max-tunnels-per-principal' (expected 1-1000000)"),
        ("max-connections 99999999999999999999", "main.conf:2:17: bad number '99999999999999999999' for 'max-connections' (expected 1-1000000)"),
        ("max-request-head 32kb", "main.conf:2:18: bad size '32kb' for 'max-request-head' (expected 1KiB-16MiB as 32768, 32k, 32KiB, 1m, 1MiB)"),
        ("max-request-head 17m", "main.conf:2:18: bad size '17m' for 'max-request-head' (expected 1KiB-16MiB as 32768, 32k, 32KiB, 1m, 1MiB)"),
        ("max-request-head 1023", "main.conf:2:18: bad size '1023' for 'max-request-head' (expected 1KiB-16MiB as 32768, 32k, 32KiB, 1m, 1MiB)"),
        ("header-timeout 0", "main.conf:2:16: bad duration '0' for 'header-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("connect-timeout 1.5s", "main.conf:2:17: bad duration '1.5s' for 'connect-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("idle-timeout 169h", "main.conf:2:14: bad duration '169h' for 'idle-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("drain-timeout 10d", "main.conf:2:15: bad duration '10d' for 'drain-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("audit-sync off", "main.conf:2:12: bad audit-sync 'off' (expected full or normal)"),
    ])
    func valueErrors(text: String, expected: String) {
        #expect(configError(Self.listen + text) == expected)
    }

    @Test("forwards", arguments: [
        ("forward 127.0.0.1:2222 app.example:22", "main.conf:2:1: missing argument: expected 'forward LISTEN_ADDR:PORT to HOST:PORT'"),
        ("forward 127.0.0.1:2222 to app.example:22 now", "main.conf:2:42: extra argument 'now': expected 'forward LISTEN_ADDR:PORT to HOST:PORT'"),
        ("forward 127.0.0.1:2222 -> app.example:22", "main.conf:2:24: expected 'to', found '->'"),
        ("forward app.example:2222 to app.example:22", "main.conf:2:9: bad listen address 'app.example:2222' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("forward 127.0.0.1:2222 to app.example", "main.conf:2:27: bad forward target 'app.example' (expected HOST:PORT)"),
        ("forward 127.0.0.1:2222 to app.example:0", "main.conf:2:27: bad port '0' in 'app.example:0' (expected 1-65535)"),
        ("forward 127.0.0.1:2222 to 0x7f000001:22", "main.conf:2:27: bad forward target '0x7f000001:22' ('0x7f000001' looks like an IP address but is not a canonical dotted quad)"),
        ("forward 127.0.0.1:2222 to other.example:22", "main.conf:2:1: forward target not registered"),
        ("forward 127.0.0.1:2222 to app.example:23", "main.conf:2:1: forward target not registered"),
        ("forward 127.0.0.1:2222 to [::ffff:10.0.0.1]:22", "main.conf:2:1: forward target not registered"),
        ("deny app.example:22\nforward 127.0.0.1:2222 to app.example:22", "main.conf:3:1: forward target app.example:22 denied by rule main.conf:2"),
        ("server *:22\nforward 127.0.0.1:2222 to 127.0.0.1:22", "main.conf:3:1: forward target not registered (127.0.0.1 is a guarded address: register it by address)"),
        ("server 0.0.0.0/0:22\nforward 127.0.0.1:2222 to 127.0.0.1:22", "main.conf:3:1: forward target not registered (127.0.0.1 is a guarded address: register it by address)"),
    ])
    func forwardErrors(text: String, expected: String) {
        #expect(configError("server app.example:22\n" + text) == expected)
    }

    @Test func errorDescriptionFormat() {
        let error = ConfigError(location: RelayCore.SourceLocation(file: "/etc/dynrelay/dynrelay.conf", line: 12, column: 8), message: "bad")
        #expect(error.description == "/etc/dynrelay/dynrelay.conf:12:8: bad")
        #expect(error.location.rule == "/etc/dynrelay/dynrelay.conf:12")
    }
}
