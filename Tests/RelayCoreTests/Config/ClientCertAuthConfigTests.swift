import Testing
@testable import RelayCore

/// `auth client-cert`: how it combines with the `407` schemes and the listeners.
@Suite("ConfigParser auth client-cert")
struct ClientCertAuthConfigTests {
    static let mtls = "listen 0.0.0.0:443 tls cert=c.pem key=k.pem client-ca=ca.pem require-client-cert\n"

    @Test("a required client certificate alone authenticates a routable HTTPS listener")
    func certificateAlone() throws {
        let config = try parseConfig(Self.mtls + "auth client-cert")
        #expect(config.auth.acceptsClientCertificate)
        #expect(config.auth.clientCertificate?.location == RelayCore.SourceLocation(file: "main.conf", line: 2, column: 1))
        #expect(config.auth.schemes.isEmpty, "no 407 scheme: a certificate is never answered to a challenge")
        #expect(config.auth.isRequired)
    }

    @Test("combined with a 407 scheme: the certificate is one more way in, the challenge list is the other schemes")
    func combined() throws {
        let config = try parseConfig("""
            listen 0.0.0.0:443 tls cert=c.pem key=k.pem client-ca=ca.pem
            listen 0.0.0.0:3128
            auth basic
            auth client-cert
            auth digest
            """)
        #expect(config.auth.acceptsClientCertificate)
        #expect(config.auth.schemes == [.digest, .basic])
        #expect(config.auth.isRequired)
    }

    @Test("without auth client-cert nothing accepts a certificate")
    func off() throws {
        let config = try parseConfig(Self.mtls + "auth basic")
        #expect(!config.auth.acceptsClientCertificate)
        #expect(config.auth.clientCertificate == nil)
    }

    @Test("loopback listeners need no auth; routable ones need a scheme, a required certificate, or auth none")
    func routable() {
        #expect(configError("listen 127.0.0.1:443 tls cert=c key=k") == nil)
        #expect(configError("listen [::1]:443 tls cert=c key=k client-ca=ca") == nil)
        #expect(configError("listen 0.0.0.0:443 tls cert=c key=k\nauth none") == nil)
        #expect(configError("listen 0.0.0.0:443 tls cert=c key=k\nauth ntlm") == nil)
        #expect(configError("listen 0.0.0.0:443 tls cert=c key=k")
                == "main.conf:1:1: listen 0.0.0.0:443 tls is not loopback: configure 'auth SCHEME' (or 'auth client-cert' with require-client-cert), or say 'auth none' on purpose")
        #expect(configError("listen 127.0.0.1:1\nlisten [::]:443 tls cert=c key=k client-ca=ca\nauth client-cert")
                == "main.conf:2:1: listen [::]:443 tls is not loopback: configure 'auth SCHEME' (or 'auth client-cert' with require-client-cert), or say 'auth none' on purpose",
                "without require-client-cert a client may come without a certificate and there is nothing to ask it for")
        #expect(configError("listen 0.0.0.0:443 tls cert=c key=k client-ca=ca require-client-cert")
                == "main.conf:1:1: listen 0.0.0.0:443 tls is not loopback: configure 'auth SCHEME' (or 'auth client-cert' with require-client-cert), or say 'auth none' on purpose",
                "require-client-cert alone checks a certificate but names no principal")
        #expect(configError("listen 0.0.0.0:443 tls cert=c key=k client-ca=ca require-client-cert\nlisten 10.0.0.1:444 tls cert=c key=k\nauth client-cert")
                == "main.conf:2:1: listen 10.0.0.1:444 tls is not loopback: configure 'auth SCHEME' (or 'auth client-cert' with require-client-cert), or say 'auth none' on purpose",
                "each listener is judged by its own require-client-cert")
        #expect(configError(Self.mtls + "listen 0.0.0.0:3128\nauth client-cert")
                == "main.conf:2:1: listen 0.0.0.0:3128 is not loopback and no client certificate reaches a plain listener: configure an 'auth SCHEME' a 407 can ask for")
        #expect(configError(Self.mtls + "listen 127.0.0.1:3128\nauth client-cert") == nil)
    }

    @Test("mistakes", arguments: [
        ("listen 127.0.0.1:1\nauth client-cert",
         "main.conf:2:1: auth client-cert: no 'listen ... tls' has client-ca=FILE, so nothing can present a certificate"),
        ("listen 127.0.0.1:1 tls cert=c key=k\nauth client-cert\nauth basic",
         "main.conf:2:1: auth client-cert: no 'listen ... tls' has client-ca=FILE, so nothing can present a certificate"),
        (mtls + "auth client-cert basic",
         "main.conf:2:18: 'auth client-cert' takes no options (another scheme goes on its own line: 'auth basic')"),
        (mtls + "auth client-cert identity=cn",
         "main.conf:2:18: 'auth client-cert' takes no options"),
        (mtls + "auth client-cert\nauth  client-cert",
         "main.conf:3:1: duplicate 'auth client-cert' (first set at main.conf:2)"),
        (mtls + "auth none\nauth client-cert",
         "main.conf:3:1: 'auth none' cannot be combined with 'auth client-cert'"),
        (mtls + "auth-helper client-cert /bin/true",
         "main.conf:2:13: expected 'auth-helper basic|digest|ntlm|negotiate [children=N] [concurrency=M] COMMAND [ARGS ...]'"),
        ("listen 127.0.0.1:1\nauth certificate",
         "main.conf:2:6: unknown auth scheme 'certificate' (expected none, client-cert, basic, digest, ntlm or negotiate)"),
        ("listen 127.0.0.1:1\nauth",
         "main.conf:2:1: missing argument: expected 'auth none|client-cert|basic|digest|ntlm|negotiate [key=value ...]'"),
    ])
    func mistakes(text: String, expected: String) {
        #expect(configError(text) == expected)
    }
}
