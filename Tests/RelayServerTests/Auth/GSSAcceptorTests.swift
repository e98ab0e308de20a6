import KerberosTestSupport
import Foundation
import RelayServer
import Testing

/// The Negotiate acceptor against a real MIT KDC: real tickets, real keytabs, real replay cache.
@Suite(.kerberosRealm) struct GSSAcceptorTests {
    /// Acceptor credentials from the realm's relay keytab, with a replay cache of their own.
    static func credential(_ kdc: TestKDC, keytab: String? = nil, principal: String? = nil,
                           replayCache: GSSReplayCache? = nil) throws -> GSSAcceptorCredential {
        try GSSAcceptorCredential(
            keytabPath: keytab ?? kdc.keytabPath, principal: principal,
            replayCache: replayCache ?? .file(path: kdc.directory + "/relay-\(UUID().uuidString).rcache2"))
    }

    /// alice's first token for the relay, as curl would send it.
    static func firstToken(_ kdc: TestKDC, target: GSSTestInitiator.Target = .hostBased(TestKDC.serviceHostBased),
                           mechanism: GSSTestInitiator.Mechanism = .spnego) throws -> (GSSTestInitiator, [UInt8]) {
        let initiator = try GSSTestInitiator(credentialCache: kdc.credentialCache, target: target, mechanism: mechanism)
        let token = try initiator.step(nil)
        #expect(!token.isEmpty)
        return (initiator, token)
    }

    @Test(arguments: [GSSTestInitiator.Mechanism.spnego, .kerberos])
    func handshakeCompletesWithMutualAuthentication(mechanism: GSSTestInitiator.Mechanism) throws {
        let kdc = try KerberosRealmTrait.realm()
        let context = GSSAcceptContext(credential: try Self.credential(kdc))
        let (initiator, token) = try Self.firstToken(kdc, mechanism: mechanism)
        #expect(!initiator.isComplete, "mutual authentication needs the acceptor's reply")

        let result = context.accept(token: token)
        guard case .complete(let principal, let reply) = result else {
            Issue.record("expected .complete, got \(result)")
            return
        }
        #expect(principal == TestKDC.userPrincipal)
        let mutual = try #require(reply, "mutual authentication asked for, no AP-REP returned")
        // The initiator verifies the relay's proof of the service key; the handshake is done.
        let last = try initiator.step(mutual)
        #expect(initiator.isComplete)
        #expect(last.isEmpty)
    }

    @Test func explicitServicePrincipalAccepts() throws {
        let kdc = try KerberosRealmTrait.realm()
        let credential = try Self.credential(kdc, principal: TestKDC.servicePrincipal)
        #expect(credential.principal == TestKDC.servicePrincipal)
        let (_, token) = try Self.firstToken(kdc)
        let result = GSSAcceptContext(credential: credential).accept(token: token)
        guard case .complete(TestKDC.userPrincipal, .some) = result else {
            Issue.record("expected alice, got \(result)")
            return
        }
    }

    @Test func garbageIsRefusedWithGSSText() throws {
        let kdc = try KerberosRealmTrait.realm()
        let credential = try Self.credential(kdc)
        let (_, real) = try Self.firstToken(kdc)
        var flipped = real
        flipped[flipped.count - 20] ^= 0x55  // inside the authenticator ciphertext
        let hostile: [[UInt8]] = [
            [0x00],
            Array("not a token at all".utf8),
            [0x60, 0x82, 0xFF, 0xFF, 0x06, 0x06, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x02],  // SPNEGO header, lying length
            Array(real.prefix(real.count / 2)),
            flipped,
            [UInt8](repeating: 0xA5, count: GSSAcceptContext.maximumTokenSize),  // largest size GSS sees
        ]
        for token in hostile {
            let result = GSSAcceptContext(credential: credential).accept(token: token)
            guard case .failed(let error) = result else {
                Issue.record("\(token.count)-byte hostile token gave \(result)")
                continue
            }
            #expect(error.code == GSSError.Code.gss)
            #expect(error.majorStatus != 0)
            #expect(error.description.hasPrefix("gss-error: "))
            #expect(error.description.split(separator: ":").count >= 3, "\(error)")
        }
    }

    @Test func emptyAndOversizedTokensNeverReachGSS() throws {
        let kdc = try KerberosRealmTrait.realm()
        let credential = try Self.credential(kdc)
        let empty = GSSAcceptContext(credential: credential).accept(token: [])
        #expect(empty == .failed(GSSError(code: GSSError.Code.emptyToken, message: "Negotiate without a token")))

        let tooLarge = [UInt8](repeating: 0x60, count: GSSAcceptContext.maximumTokenSize + 1)
        guard case .failed(let error) = GSSAcceptContext(credential: credential).accept(token: tooLarge) else {
            Issue.record("oversized token was not refused")
            return
        }
        #expect(error.code == GSSError.Code.tokenTooLarge)
        #expect(error.majorStatus == 0)
        #expect(error.description == "gss-token-too-large: token of 65537 bytes exceeds 65536")
    }

    @Test func ticketForAnotherServiceFails() throws {
        let kdc = try KerberosRealmTrait.realm()
        let (_, token) = try Self.firstToken(kdc, target: .principal(TestKDC.otherServicePrincipal))
        let result = GSSAcceptContext(credential: try Self.credential(kdc)).accept(token: token)
        guard case .failed(let error) = result else {
            Issue.record("a ticket for \(TestKDC.otherServicePrincipal) was accepted: \(result)")
            return
        }
        #expect(error.code == GSSError.Code.gss)
        #expect(error.minorStatus != 0)
        #expect(error.message.contains("other.example.test"), "\(error)")

        // The token itself was sound: the holder of that service's key accepts it.
        let other = try Self.credential(kdc, keytab: kdc.otherKeytabPath)
        let (_, fresh) = try Self.firstToken(kdc, target: .principal(TestKDC.otherServicePrincipal))
        guard case .complete(TestKDC.userPrincipal, _) = GSSAcceptContext(credential: other).accept(token: fresh) else {
            Issue.record("the other service's own keytab refused its ticket")
            return
        }
    }

    @Test func credentialErrorsAreReportedAtConfigurationTime() throws {
        let kdc = try KerberosRealmTrait.realm()
        #expect {
            try Self.credential(kdc, keytab: kdc.directory + "/missing.keytab")
        } throws: { error in
            (error as? GSSError)?.code == GSSError.Code.credentials
        }
        #expect {
            try Self.credential(kdc, principal: TestKDC.otherServicePrincipal)
        } throws: { error in
            guard let error = error as? GSSError else { return false }
            return error.code == GSSError.Code.credentials && error.majorStatus != 0
                && error.description.hasPrefix("gss-credentials: ")
        }
    }

    @Test func replayedTokenIsRefusedByTheReplayCache() throws {
        let kdc = try KerberosRealmTrait.realm()
        let rcache = kdc.directory + "/replay-\(UUID().uuidString).rcache2"
        let credential = try Self.credential(kdc, replayCache: .file(path: rcache))
        let (_, token) = try Self.firstToken(kdc)

        guard case .complete(TestKDC.userPrincipal, _) = GSSAcceptContext(credential: credential).accept(token: token) else {
            Issue.record("the first use of the token failed")
            return
        }
        #expect(FileManager.default.fileExists(atPath: rcache), "replay cache not written where configured")

        // The same AP-REQ on another connection, and after a reload (new credential, same file).
        let reloaded = try Self.credential(kdc, replayCache: .file(path: rcache))
        for acceptor in [credential, reloaded] {
            guard case .failed(let error) = GSSAcceptContext(credential: acceptor).accept(token: token) else {
                Issue.record("a replayed token was accepted")
                continue
            }
            #expect(error.code == GSSError.Code.gss)
            #expect(error.message.lowercased().contains("replay"), "\(error)")
        }
    }

    @Test func libraryDefaultReplayCacheFollowsKRB5RCACHEDIR() throws {
        let kdc = try KerberosRealmTrait.realm()
        let credential = try Self.credential(kdc, replayCache: .libraryDefault)
        let (_, token) = try Self.firstToken(kdc)
        guard case .complete(TestKDC.userPrincipal, _) = GSSAcceptContext(credential: credential).accept(token: token) else {
            Issue.record("acceptance with the default replay cache failed")
            return
        }
        #expect(FileManager.default.fileExists(atPath: kdc.directory + "/krb5_\(geteuid()).rcache2"))
    }

    @Test func aDecidedHandshakeTakesNoMoreTokens() throws {
        let kdc = try KerberosRealmTrait.realm()
        let context = GSSAcceptContext(credential: try Self.credential(kdc))
        let (_, token) = try Self.firstToken(kdc)
        guard case .complete = context.accept(token: token) else {
            Issue.record("handshake did not complete")
            return
        }
        let (_, another) = try Self.firstToken(kdc)
        guard case .failed(let error) = context.accept(token: another) else {
            Issue.record("a finished context accepted another token")
            return
        }
        #expect(error.code == GSSError.Code.contextFinished)

        let failed = GSSAcceptContext(credential: try Self.credential(kdc))
        _ = failed.accept(token: [1, 2, 3])
        let (_, good) = try Self.firstToken(kdc)
        guard case .failed(let again) = failed.accept(token: good) else {
            Issue.record("a failed context accepted a token")
            return
        }
        #expect(again.code == GSSError.Code.contextFinished)
    }

    @Test func connectionsShareOneCredentialAcrossThreads() async throws {
        let kdc = try KerberosRealmTrait.realm()
        let credential = try Self.credential(kdc)
        let tokens = try (0..<16).map { _ in try Self.firstToken(kdc).1 }
        let principals = await withTaskGroup(of: String?.self) { group in
            for token in tokens {
                group.addTask {
                    if case .complete(let principal, _) = GSSAcceptContext(credential: credential).accept(token: token) {
                        return principal
                    }
                    return nil
                }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(principals == Array(repeating: TestKDC.userPrincipal, count: 16))
    }
}
