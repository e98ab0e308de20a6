import Testing
@testable import RelayCore

@Suite struct AuthConfigTests {
    @Test func everySchemeWithItsOptions() throws {
        let config = try parseConfig("""
        listen 0.0.0.0:3128
        auth basic realm=corp
        auth digest realm=corp algorithm=MD5,SHA-256 nonce-ttl=2m
        auth ntlm domain=corp
        auth negotiate keytab=/etc/dynrelay/http.keytab principal=HTTP/proxy.corp@CORP
        auth-lockout failures=3 source-failures=10 window=1m duration=10m
        auth-cache-ttl 30s
        user-key-file /etc/dynrelay/user.key
        """)
        let auth = config.auth
        #expect(auth.schemes == [.negotiate, .ntlm, .digest, .basic], "strongest first whatever the config order")
        #expect(auth.basic?.realm == "corp")
        #expect(auth.digest?.algorithms == [.md5, .sha256])
        #expect(auth.digest?.nonceLifetime == .seconds(120))
        #expect(auth.ntlm?.domain == "CORP")
        #expect(auth.negotiate?.principal == "HTTP/proxy.corp@CORP")
        #expect(auth.lockout == AuthConfig.Lockout(principalFailures: 3, sourceFailures: 10, window: .seconds(60), duration: .seconds(600)))
        #expect(auth.cacheTTL == .seconds(30))
        #expect(auth.userKeyFile == "/etc/dynrelay/user.key")
    }

    @Test func helpersCarryTheirArgvAndPoolSizes() throws {
        let config = try parseConfig("""
        listen 127.0.0.1:0
        auth basic
        auth-helper basic children=3 concurrency=16 /usr/lib/squid/basic_ncsa_auth /etc/dynrelay/htpasswd
        auth ntlm
        auth-helper ntlm /usr/lib/squid/ntlm_fake_auth
        """)
        #expect(config.auth.helper(for: .basic)?.argv == ["/usr/lib/squid/basic_ncsa_auth", "/etc/dynrelay/htpasswd"])
        #expect(config.auth.helper(for: .basic)?.children == 3)
        #expect(config.auth.helper(for: .basic)?.concurrency == 16)
        #expect(config.auth.helper(for: .ntlm)?.concurrency == 0)
    }

    @Test func aRoutableListenerNeedsAuthOrAnExplicitNone() throws {
        #expect(configError("listen 0.0.0.0:3128\n") == "main.conf:1:1: listen 0.0.0.0:3128 is not loopback: configure 'auth SCHEME', or say 'auth none' on purpose")
        #expect(configError("listen [::]:3128\n")?.contains("is not loopback") == true)
        #expect(configError("listen 0.0.0.0:3128\nauth none\n") == nil)
        #expect(configError("listen 127.0.0.1:3128\n") == nil)
        #expect(configError("listen [::1]:3128\n") == nil)
        #expect(try parseConfig("listen 127.0.0.1:3128\n").auth.isRequired == false)
    }

    @Test func mistakesAreReportedWhereTheyAre() {
        let cases: [(String, String)] = [
            ("listen 127.0.0.1:0\nauth\n", "main.conf:2:1: missing argument"),
            ("listen 127.0.0.1:0\nauth kerberos\n", "main.conf:2:6: unknown auth scheme 'kerberos'"),
            ("listen 127.0.0.1:0\nauth basic realm=a\nauth basic\n", "main.conf:3:1: duplicate 'auth basic'"),
            ("listen 127.0.0.1:0\nauth basic relm=a\n", "main.conf:2:12: unknown option 'relm' for 'auth basic'"),
            ("listen 127.0.0.1:0\nauth basic realm=\"x\n", "main.conf:2:12: bad realm"),
            ("listen 127.0.0.1:0\nauth digest algorithm=SHA-1\n", "main.conf:2:13: bad algorithm list"),
            ("listen 127.0.0.1:0\nauth digest nonce-ttl=0s\n", "main.conf:2:13: bad duration"),
            ("listen 127.0.0.1:0\nauth none\nauth basic\n", "main.conf:3:1: 'auth none' cannot be combined with 'auth basic'"),
            ("listen 127.0.0.1:0\nauth negotiate\n", "main.conf:2:1: auth negotiate needs keytab=PATH"),
            ("listen 127.0.0.1:0\nauth-helper basic /bin/true\n", "main.conf:2:1: auth-helper basic without 'auth basic'"),
            ("listen 127.0.0.1:0\nauth basic\nauth-helper basic helper\n", "main.conf:3:19: auth-helper COMMAND must be an absolute path"),
            ("listen 127.0.0.1:0\nauth ntlm\nauth-helper ntlm concurrency=4 /bin/true\n", "main.conf:3:1: auth-helper ntlm: a stateful helper takes no concurrency"),
            ("listen 127.0.0.1:0\nauth digest\nauth-helper digest /usr/lib/squid/digest_file_auth /x\n", "main.conf:3:1: a Squid digest helper returns MD5 HA1 only"),
            ("listen 127.0.0.1:0\nauth ntlm domain=WAY-TOO-LONG-DOMAIN\n", "main.conf:2:11: bad NTLM domain"),
            ("listen 127.0.0.1:0\nauth-lockout failures=0\n", "main.conf:2:14: bad number '0' for 'failures'"),
            ("listen 127.0.0.1:0\nuser-key-file key\n", "main.conf:2:15: expected 'user-key-file /ABSOLUTE/PATH'"),
        ]
        for (text, expected) in cases {
            let error = configError(text) ?? "<parsed>"
            #expect(error.hasPrefix(expected), "\(text) → \(error)")
        }
    }
}
