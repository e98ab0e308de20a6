import Testing
@testable import RelayCore

/// Every error of the TLS directives and options, asserted to the exact
/// `file:line:col: message` ops will read.
@Suite("ConfigParser TLS errors")
struct TLSConfigErrorTests {
    static let listen = "listen 127.0.0.1:3128\n"

    static let listenCases: [(String, String)] = [
        ("listen 127.0.0.1:1 tls",
         "main.conf:1:1: missing cert=FILE: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 tls cert=a.pem",
         "main.conf:1:1: missing key=FILE: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 tls key=k.pem client-ca=ca.pem",
         "main.conf:1:1: missing cert=FILE: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 tls cert=a key=b require-client-cert",
         "main.conf:1:37: require-client-cert needs client-ca=FILE (the CA client certificates are checked against)"),
        ("listen 127.0.0.1:1 cert=a key=b",
         "main.conf:1:20: 'cert=a' needs 'tls' after the address: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 require-client-cert",
         "main.conf:1:20: 'require-client-cert' needs 'tls' after the address: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 extra cert=a",
         "main.conf:1:26: 'cert=a' needs 'tls' after the address: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 TLS cert=a key=b",
         "main.conf:1:24: 'cert=a' needs 'tls' after the address: expected 'listen ADDR:PORT tls cert=FILE key=FILE [client-ca=FILE] [require-client-cert] [tls-versions=LIST]'"),
        ("listen 127.0.0.1:1 extra tls",
         "main.conf:1:20: extra argument 'extra': expected 'listen ADDR:PORT'"),
        ("listen 127.0.0.1:1 tls cert=a key=b foo=bar",
         "main.conf:1:37: unknown option 'foo' for 'listen ... tls'"),
        ("listen 127.0.0.1:1 tls cert=a key=b ca=c",
         "main.conf:1:37: unknown option 'ca' for 'listen ... tls'"),
        ("listen 127.0.0.1:1 tls cert=a key=b bogus",
         "main.conf:1:37: unknown option 'bogus' for 'listen ... tls'"),
        ("listen 127.0.0.1:1 tls cert=a key=b tls",
         "main.conf:1:37: duplicate option 'tls'"),
        ("listen 127.0.0.1:1 tls cert=a cert=b key=c",
         "main.conf:1:31: duplicate option 'cert'"),
        ("listen 127.0.0.1:1 tls cert=a key=b client-ca=c require-client-cert require-client-cert",
         "main.conf:1:69: duplicate option 'require-client-cert'"),
        ("listen 127.0.0.1:1 tls cert= key=b",
         "main.conf:1:24: expected key=value, found 'cert='"),
        ("listen 127.0.0.1:1 tls cert=a key=b require-client-cert=yes",
         "main.conf:1:37: 'require-client-cert' takes no value"),
        ("listen 127.0.0.1:1 tls cert=a key=b tls-versions=1.4",
         "main.conf:1:37: bad tls-versions '1.4': unknown TLS version '1.4' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("listen 127.0.0.1:1 tls cert=a key=b tls-versions=1.2,,1.3",
         "main.conf:1:37: bad tls-versions '1.2,,1.3': unknown TLS version '' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("listen 127.0.0.1:1 tls cert=a key=b tls-versions=1.2 1.3",
         "main.conf:1:54: unknown option '1.3' for 'listen ... tls'"),
        ("listen localhost:1 tls cert=a key=b",
         "main.conf:1:8: bad listen address 'localhost:1' (expected IPv4:PORT or [IPv6]:PORT)"),
        ("listen 127.0.0.1:99999 tls cert=a key=b",
         "main.conf:1:8: bad port '99999' in '127.0.0.1:99999' (expected 0-65535, 0 = ephemeral)"),
    ]

    static let serverCases: [(String, String)] = [
        ("server a.example:443 foo",
         "main.conf:2:22: extra argument 'foo': expected 'server HOSTPAT:PORTS'"),
        ("server a.example:443 foo=1",
         "main.conf:2:22: unknown option 'foo' for 'server'"),
        ("server a.example:443 cert=a",
         "main.conf:2:22: unknown option 'cert' for 'server'"),
        ("server a.example:443 tls=yes",
         "main.conf:2:22: 'tls' takes no value"),
        ("server a.example:443 tls tls",
         "main.conf:2:26: duplicate option 'tls'"),
        ("server a.example:443 verify=no",
         "main.conf:2:22: bad verify 'no' (expected on or off)"),
        ("server a.example:443 verify=OFF",
         "main.conf:2:22: bad verify 'OFF' (expected on or off)"),
        ("server a.example:443 sni=exact",
         "main.conf:2:22: bad sni 'exact' (expected match, optional or any)"),
        ("server a.example:443 tunnel-tls=yes",
         "main.conf:2:22: bad tunnel-tls 'yes' (expected any or required)"),
        ("server a.example:443 tls-versions=1.2;1.3",
         "main.conf:2:22: bad tls-versions '1.2;1.3': unknown TLS version '1.2;1.3' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("server a.example:443 tls-versions=",
         "main.conf:2:22: expected key=value, found 'tls-versions='"),
        ("server a.example:443 ca=",
         "main.conf:2:22: expected key=value, found 'ca='"),
        ("server a.example:443 sni=any sni=match",
         "main.conf:2:30: duplicate option 'sni'"),
        ("deny a.example tls",
         "main.conf:2:16: extra argument 'tls': expected 'deny HOSTPAT[:PORTS]'"),
        ("deny a.example sni=any",
         "main.conf:2:16: extra argument 'sni=any': expected 'deny HOSTPAT[:PORTS]'"),
        ("server a.example tls",
         "main.conf:2:8: missing ports: expected 'server HOSTPAT:PORTS' (PORTS: 443, 8080-8089 or *)"),
    ]

    static let globalCases: [(String, String)] = [
        ("tls-versions",
         "main.conf:2:1: missing argument: expected 'tls-versions VERSION ...' (1.0 1.1 1.2 1.3, GDEnableTLS1.1, GDEnableTLS1.2)"),
        ("tls-versions 1.2 1.4",
         "main.conf:2:18: unknown TLS version '1.4' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("tls-versions 1.2,1.3",
         "main.conf:2:14: unknown TLS version '1.2,1.3' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("tls-versions TLSv1.2",
         "main.conf:2:14: unknown TLS version 'TLSv1.2' (expected 1.0 1.1 1.2 1.3, GDEnableTLS1.1 or GDEnableTLS1.2)"),
        ("tls-versions 1.2\ntls-versions 1.3",
         "main.conf:3:1: duplicate 'tls-versions' (first set at main.conf:2)"),
        ("GDEnableTLS1.1 yes",
         "main.conf:2:16: extra argument 'yes': 'GDEnableTLS1.1' takes no arguments"),
        ("GDEnableTLS1.2 on",
         "main.conf:2:16: extra argument 'on': 'GDEnableTLS1.2' takes no arguments"),
        ("GDEnableTLS1.2\n\nGDEnableTLS1.2",
         "main.conf:4:1: duplicate 'GDEnableTLS1.2' (first set at main.conf:2)"),
        ("gdenabletls1.1",
         "main.conf:2:1: unknown directive 'gdenabletls1.1'"),
        ("GDEnableTLS1.3",
         "main.conf:2:1: unknown directive 'GDEnableTLS1.3'"),
        ("tls-inspect-timeout",
         "main.conf:2:1: missing argument: expected 'tls-inspect-timeout DURATION'"),
        ("tls-inspect-timeout 0",
         "main.conf:2:21: bad duration '0' for 'tls-inspect-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("tls-inspect-timeout 8d",
         "main.conf:2:21: bad duration '8d' for 'tls-inspect-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ("tls-inspect-timeout 1s 2s",
         "main.conf:2:24: extra argument '2s': expected 'tls-inspect-timeout DURATION'"),
        ("tls-inspect-timeout 1s\ntls-inspect-timeout 1s",
         "main.conf:3:1: duplicate 'tls-inspect-timeout' (first set at main.conf:2)"),
        ("tls-inspect-on-timeout drop",
         "main.conf:2:24: bad tls-inspect-on-timeout 'drop' (expected refuse or pass)"),
        ("tls-inspect-on-timeout",
         "main.conf:2:1: missing argument: expected 'tls-inspect-on-timeout refuse|pass'"),
        ("tls-inspect-on-overflow",
         "main.conf:2:1: missing argument: expected 'tls-inspect-on-overflow refuse|pass'"),
        ("tls-inspect-on-overflow pass refuse",
         "main.conf:2:30: extra argument 'refuse': expected 'tls-inspect-on-overflow refuse|pass'"),
        ("tls-inspect-on-overflow Refuse",
         "main.conf:2:25: bad tls-inspect-on-overflow 'Refuse' (expected refuse or pass)"),
        ("tls-inspect-on-overflow pass\ntls-inspect-on-overflow pass",
         "main.conf:3:1: duplicate 'tls-inspect-on-overflow' (first set at main.conf:2)"),
    ]
    @Test("listen ... tls", arguments: listenCases)
    func listenErrors(text: String, expected: String) {
        #expect(configError(text) == expected)
    }

    @Test("server options", arguments: serverCases)
    func serverErrors(text: String, expected: String) {
        #expect(configError(Self.listen + text) == expected)
    }

    @Test("global TLS directives", arguments: globalCases)
    func globalErrors(text: String, expected: String) {
        #expect(configError(Self.listen + text) == expected)
    }

    @Test("an option error in an included file points into that file")
    func errorInInclude() {
        #expect(configError("listen 127.0.0.1:1\ninclude a.conf", file: "/c/main.conf",
                            files: ["/c/a.conf": "\nserver a.example:443 sni=strict"])
                == "/c/a.conf:2:22: bad sni 'strict' (expected match, optional or any)")
    }
}
