import Testing
@testable import RelayCore

/// ClientHellos built to test one rule each: versions, names, GREASE, ECH and malformed bytes.
@Suite struct TLSInspectorClientHelloTests {
    typealias B = TLSHelloBuilder
    typealias Harness = TLSInspectorHarness

    static func judged(_ hello: [UInt8], policy: TunnelTLSPolicy = TunnelTLSPolicy()) -> Harness {
        var run = Harness(policy: policy)
        run.client(hello)
        return run
    }

    @Test func greaseInEveryListIsIgnored() {
        let g = B.grease
        let hello = B.clientHello(suites: [g, 0x1301], extensions: [
            B.ext(0x0A0A, []), B.serverName("app.corp.example"), B.supportedVersions([g, 0x0304, 0x0303]),
            B.supportedGroups([g, 0x001D]), B.keyShare([(g, 1), (0x001D, 32)]), B.ext(45, B.vector8([0x2A, 1])),
            B.ext(16, B.vector16(B.vector8(Array("h2".utf8)) + B.vector8([0x7A, 0x7A]))), B.ext(0xFAFA, [0]),
        ])
        var run = Self.judged(hello)
        #expect(run.toServer == hello)
        #expect(run.inspector.facts.offeredVersions == [.tls1_2, .tls1_3])
        run.server(B.serverHello())
        #expect(run.finished)
    }

    @Test func aGREASECipherSuiteIsNeverOfferedForTheServerToChoose() {
        var run = Self.judged(B.clientHello(suites: [B.grease, 0x1301]))
        run.server(B.serverHello(suite: B.grease))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.alert == Harness.alert(47))
    }

    @Test func supportedVersionsListingOnly12() {
        let hello = B.clientHello(versions: [B.grease, 0x0303])
        let refused = Self.judged(hello, policy: TunnelTLSPolicy(versions: TLSVersionSet([.tls1_3])))
        #expect(refused.refusal?.reason == .tlsVersionRefused)
        #expect(refused.refusal?.detail == "offered=1.2 allowed=1.3")
        var passed = Self.judged(hello)
        #expect(passed.toServer == hello)
        // A ServerHello picking 1.3, which this client did not offer.
        passed.server(B.serverHello(version: 0x0304))
        #expect(passed.refusal?.reason == .badTLSHandshake)
        #expect(passed.refusal?.detail.hasPrefix("negotiated=1.3, which the client did not offer") == true)
        #expect(passed.refusal?.alert == Harness.alert(47))
        #expect(passed.toClient.isEmpty)
    }

    @Test func onlyGREASEAndUnknownVersionsOfferNothing() {
        let run = Self.judged(B.clientHello(versions: [B.grease, 0x0305, 0x0300]))
        #expect(run.refusal?.detail == "offered=none allowed=1.2,1.3")
    }

    @Test(arguments: [("app.corp.example.", true), ("APP.Corp.EXAMPLE", true), ("App.corp.example.", true),
                      ("evil.example", false), ("app.corp.example..", false), ("app.corp.example.evil", false)])
    func theServerNameIsComparedAsTheRegistryComparesHosts(name: String, matches: Bool) {
        let run = Self.judged(B.clientHello(host: name))
        if matches {
            #expect(run.toServer.count > 0 && run.refusal == nil)
            #expect(run.inspector.facts.sni == "app.corp.example")
        } else {
            #expect(run.refusal?.reason == .sniMismatch)
            #expect(run.refusal?.alert == Harness.alert(112))
            #expect(run.toServer.isEmpty)
        }
    }

    @Test func aMismatchNamesBothHostsAndPassesUnderSNIAny() {
        let hello = B.clientHello(host: "Evil.Example")
        #expect(Self.judged(hello).refusal?.detail == "sni=evil.example connect=app.corp.example")
        let any = Self.judged(hello, policy: TunnelTLSPolicy(sni: .any))
        #expect(any.toServer == hello)
        #expect(any.inspector.facts.sni == "evil.example")
        #expect(Self.judged(hello, policy: TunnelTLSPolicy(sni: .optional)).refusal?.reason == .sniMismatch)
    }

    @Test func aNameThatIsNoHostIsAMismatchAndAuditedEscaped() {
        let hello = B.clientHello(extensions: [B.serverName([(0, Array("a\u{1}b.example".utf8))]), B.supportedVersions([0x0304])])
        let run = Self.judged(hello)
        #expect(run.refusal?.reason == .sniMismatch)
        #expect(run.inspector.facts.sni == "a\\x01b.example")
    }

    @Test func aServerNameOfAnotherTypeIsNoServerName() {
        let hello = B.clientHello(extensions: [B.serverName([(1, Array("app.corp.example".utf8))]), B.supportedVersions([0x0304])])
        #expect(Self.judged(hello).refusal?.reason == .sniMissing)
        #expect(Self.judged(hello, policy: TunnelTLSPolicy(sni: .optional)).toServer == hello)
    }

    @Test(arguments: [
        ("two host names", [B.serverName([(0, Array("app.corp.example".utf8)), (0, Array("evil.example".utf8))])]),
        ("an empty host name", [B.serverName([(0, [])])]),
        ("an empty name list", [B.ext(0, B.vector16([]))]),
        ("an empty extension", [B.ext(0, [])]),
        ("two server_name extensions", [B.serverName("app.corp.example"), B.serverName("evil.example")]),
        ("a name longer than its list", [B.ext(0, B.u16(5) + [0] + B.u16(16) + Array("app.corp.example".utf8))]),
        ("bytes after the list", [B.ext(0, B.vector16([0] + B.vector16(Array("a.b".utf8))) + [0])]),
        ("an odd supported_versions", [B.serverName("app.corp.example"), B.ext(43, [3, 3, 4, 3])]),
        ("an empty supported_versions", [B.serverName("app.corp.example"), B.ext(43, [0])]),
        ("an extension longer than the block", [B.u16(0) + B.u16(400) + [0, 1]]),
    ])
    func malformedExtensionsAreRefused(what: String, extensions: [[UInt8]]) {
        let run = Self.judged(B.clientHello(extensions: extensions), policy: TunnelTLSPolicy(sni: .any))
        #expect(run.refusal?.reason == .badTLSHandshake, "\(what)")
        #expect(run.refusal?.alert == Harness.alert(50), "\(what)")
        #expect(run.toServer.isEmpty, "\(what)")
    }

    @Test func aTruncatedClientHelloBodyIsRefused() {
        let message = B.clientHelloMessage()
        // The same message cut short by 10 bytes, its header saying so: its extensions block runs past it.
        let body = Array(message[4..<(message.count - 10)])
        let run = Self.judged(B.record(B.handshake(1, body)))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.detail.contains("runs past") == true)
    }

    @Test func aClientHelloLongerThanItsContentIsRefused() {
        let message = B.clientHelloMessage()
        // The header claims 10 more bytes than the hello has: they arrive as zeros the hello does not account for.
        let body = Array(message[4...]) + [UInt8](repeating: 0, count: 10)
        let run = Self.judged(B.record(B.handshake(1, body)))
        #expect(run.refusal?.detail.contains("left over") == true)
    }

    @Test func aHandshakeMessageLongerThanTheInspectionBufferOverflows() {
        let header: [UInt8] = [1] + B.u24(TLSInspectionSettings.bufferLimit + 1)
        let run = Self.judged(B.record(header + [UInt8](repeating: 0, count: 100)))
        #expect(run.refusal?.reason == .tlsInspectionOverflow)
        #expect(run.refusal?.alert == Harness.alert(40))
    }

    @Test func aRecordOverTheTLSLimitIsRefused() {
        let run = Self.judged([0x16, 0x03, 0x01] + B.u16(16385) + [UInt8](repeating: 1, count: 16385))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.detail.contains("16385") == true)
    }

    @Test(arguments: [[UInt8]([0x14, 0x03, 0x03, 0x00, 0x01, 0x01]), [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28],
                      [0x17, 0x03, 0x03, 0x00, 0x01, 0x00]])
    func aRecordOfAnotherTypeBeforeTheClientHelloIsRefused(record: [UInt8]) {
        var run = Harness(policy: TunnelTLSPolicy(requirement: .any))
        run.client(record + B.clientHello())
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.alert == Harness.alert(10))
        #expect(run.toServer.isEmpty)
    }

    @Test func anSSLv2CompatibleHelloIsRefusedWithoutATLSAlert() {
        // RFC 5246 appendix E.2: a 2-byte length with the high bit set, then msg_type 1, version 3.1.
        let hello: [UInt8] = [0x80, 0x2E, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00, 0x00, 0x10] + [UInt8](repeating: 0, count: 37)
        var run = Harness()
        run.client(Array(hello.prefix(2)))
        #expect(run.outcome == nil)
        run.client(Array(hello.dropFirst(2)))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.alert == nil)
        #expect(run.toServer.isEmpty)
    }

    @Test func anotherHandshakeMessageAfterTheClientHelloInItsRecordIsRefused() {
        let run = Self.judged(B.record(B.clientHelloMessage() + B.handshake(11, [0, 0, 0])))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.toServer.isEmpty)
    }

    @Test func aPostQuantumSizedClientHelloInTwoReadsIsJudgedWhole() {
        let hello = B.clientHello(extensions: [
            B.serverName("app.corp.example"), B.supportedVersions([0x0304, 0x0303]),
            B.supportedGroups([0x11EC, 0x001D]), B.keyShare([(0x11EC, 1216), (0x001D, 32)]),
            B.ext(13, B.vector16([UInt8](repeating: 4, count: 40))), B.ext(21, [UInt8](repeating: 0, count: 400)),
        ])
        #expect(hello.count > 1800)
        var run = Harness()
        #expect(run.client(Array(hello.prefix(1000))) == [.startTimer])
        #expect(run.client(Array(hello.dropFirst(1000))) == [.toServer(hello)])
        run.server(B.serverHello())
        #expect(run.finished)
    }

    @Test func anECHHelloIsJudgedOnItsOuterNameAndAuditedSo() {
        let hello = B.clientHello(extensions: [B.serverName("app.corp.example"), B.supportedVersions([0x0304]),
                                               B.ext(0xFE0D, [0] + [UInt8](repeating: 7, count: 90))])
        var run = Self.judged(hello)
        run.server(B.serverHello())
        #expect(run.finished)
        #expect(run.inspector.facts.ech)
        #expect(run.inspector.facts.sni == "app.corp.example")
        let other = B.clientHello(extensions: [B.serverName("public.example"), B.supportedVersions([0x0304]), B.ext(0xFE0D, [0, 1])])
        #expect(Self.judged(other).refusal?.reason == .sniMismatch)
    }

    @Test func aLegacyHelloWithoutExtensionsOffersTheVersionsUpToItsOwn() {
        let message = B.clientHelloMessage(legacyVersion: 0x0302)
        // Version, random, session id, three suites, one compression method: no extensions block,
        // as TLS 1.0 and 1.1 hellos may end.
        let legacy = B.handshake(1, Array(message[4..<(4 + 2 + 32 + 33 + 8 + 2)]))
        let run = Self.judged(B.record(legacy), policy: TunnelTLSPolicy(versions: TLSVersionSet([.tls1_0]), sni: .any))
        #expect(run.toServer == B.record(legacy))
        #expect(run.inspector.facts.offeredVersions == [.tls1_0, .tls1_1])
    }
}
