import Testing
@testable import RelayCore

/// ServerHellos and HelloRetryRequests built to test one rule each.
@Suite struct TLSInspectorServerHelloTests {
    typealias B = TLSHelloBuilder
    typealias Harness = TLSInspectorHarness

    static func answered(_ answer: [UInt8], hello: [UInt8] = B.clientHello(),
                         policy: TunnelTLSPolicy = TunnelTLSPolicy()) -> Harness {
        var run = Harness(policy: policy)
        run.client(hello)
        run.server(answer)
        return run
    }

    @Test func aTLS12ServerHelloWithoutExtensionsIsRead() {
        let answer = B.serverHello(version: 0x0303, suite: 0xC02F)
        let run = Self.answered(answer)
        #expect(run.finished && run.toClient == answer)
        #expect(run.inspector.facts.auditVersion == "TLSv1.2")
        #expect(run.inspector.facts.auditCipher == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    }

    @Test func anUnknownCipherSuiteIsAuditedInHex() {
        let run = Self.answered(B.serverHello(suite: 0x00FF), hello: B.clientHello(suites: [0x00FF]))
        #expect(run.inspector.facts.auditCipher == "0x00ff")
    }

    @Test func aVersionTheClientDidNotOfferIsRefused() {
        let run = Self.answered(B.serverHello(version: 0x0302), hello: B.clientHello(versions: [0x0304, 0x0303]),
                                policy: TunnelTLSPolicy(versions: TLSVersionSet(TLSVersion.allCases)))
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.detail == "negotiated=1.1, which the client did not offer (offered=1.2,1.3)")
        #expect(run.refusal?.alert == Harness.alert(47))
        #expect(run.toClient.isEmpty)
    }

    @Test func aNegotiatedVersionNotAllowedIsRefused() {
        let run = Self.answered(B.serverHello(version: 0x0302), hello: B.clientHello(versions: [0x0303, 0x0302]))
        #expect(run.refusal?.reason == .tlsVersionRefused)
        #expect(run.refusal?.detail == "negotiated=1.1 allowed=1.2,1.3")
        #expect(run.refusal?.alert == Harness.alert(70))
    }

    @Test func supportedVersionsBelow13InAServerHelloIsRefused() {
        let run = Self.answered(B.serverHello(version: 0x0303, extensions: [B.ext(43, B.u16(0x0303))]))
        #expect(run.refusal?.reason == .badTLSHandshake)
    }

    @Test func helloRetryThenTheRealServerHelloWithCompatibilityChangeCipherSpecs() {
        var run = Harness()
        let first = B.clientHello()
        run.client(first)
        let retry = B.serverHello(retry: true)
        #expect(run.server(retry + B.changeCipherSpec) == [.toClient(retry)])
        let second = B.changeCipherSpec + B.clientHello()
        #expect(run.client(second) == [.toServer(second)])
        let answer = B.serverHello() + B.changeCipherSpec + B.applicationData(40)
        #expect(run.server(answer) == [.toClient(B.changeCipherSpec + answer), .finished])
        #expect(run.inspector.facts.helloRetry)
        #expect(run.toServer == first + second)
    }

    @Test func aSecondClientHelloNamingAnotherHostIsRefused() {
        var run = Harness()
        run.client(B.clientHello())
        run.server(B.serverHello(retry: true))
        run.client(B.changeCipherSpec + B.clientHello(host: "other.corp.example"))
        #expect(run.refusal?.reason == .sniMismatch)
        #expect(run.refusal?.detail == "sni=other.corp.example connect=app.corp.example")
        #expect(run.toServer == B.clientHello())
    }

    @Test func aSecondHelloRetryRequestIsRefused() {
        var run = Harness()
        run.client(B.clientHello())
        run.server(B.serverHello(retry: true))
        run.client(B.clientHello())
        run.server(B.serverHello(retry: true))
        #expect(run.refusal?.detail == "a second HelloRetryRequest")
    }

    @Test func aClientHelloWithoutARetryRequestIsRefused() {
        var run = Harness()
        run.client(B.clientHello())
        run.client(B.clientHello())
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.alert == Harness.alert(10))
    }

    @Test func applicationDataFromTheServerBeforeItsHelloIsRefused() {
        let run = Self.answered(B.applicationData(20) + B.serverHello())
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.toClient.isEmpty)
    }

    @Test func anotherMessageBeforeTheServerHelloIsRefused() {
        let run = Self.answered(B.record(B.handshake(11, [0, 0, 0])))
        #expect(run.refusal?.detail == "handshake message type 11 from the server instead of a ServerHello")
    }

    @Test func aServerAlertIsHeldAndForwardedWhenTheServerCloses() {
        var run = Self.answered(Harness.alert(40))
        #expect(run.outcome == nil)
        run.serverEOF()
        #expect(run.finished)
        #expect(run.toClient == Harness.alert(40))
    }

    @Test func earlyDataAndChangeCipherSpecFromTheClientWaitForTheDecision() {
        var run = Harness()
        let hello = B.clientHello()
        let early = B.changeCipherSpec + B.applicationData(100)
        #expect(run.client(hello + early) == [.startTimer, .toServer(hello)])
        #expect(run.server(B.serverHello()) == [.toServer(early), .toClient(B.serverHello()), .finished])
    }

    @Test func aServerHelloSplitAcrossRecordsAndReadsIsRead() {
        let message = Array(B.serverHello().dropFirst(5))
        let fragmented = B.records(message, size: 3)
        var run = Harness()
        run.client(B.clientHello())
        run.server(fragmented, every: 2)
        #expect(run.finished && run.toClient == fragmented)
    }

    @Test func aMalformedChangeCipherSpecIsRefused() {
        let run = Self.answered([0x14, 0x03, 0x03, 0x00, 0x02, 0x01, 0x01])
        #expect(run.refusal?.reason == .badTLSHandshake)
    }

    /// Both sides malformed while the ServerHello is awaited: whichever record is complete
    /// first is named, so the detail follows arrival, and the verdict does not. (The fuzz
    /// target's split invariant compares refusals by reason code for this reason; its seed
    /// `both-sides-malformed-after-a-retry` is the input that showed it.)
    @Test(arguments: [true, false])
    func bothSidesMalformedIsABadHandshakeWhicheverIsCompleteFirst(clientFirst: Bool) {
        let unknownType: [UInt8] = [0x01, 0x03, 0x03, 0x00, 0x01, 0x00]
        let badChangeCipherSpec: [UInt8] = [0x14, 0x03, 0x03, 0x00, 0x01, 0x05]
        var run = Harness()
        run.client(B.clientHello() + unknownType.prefix(clientFirst ? 6 : 1))
        run.server(badChangeCipherSpec)
        if !clientFirst { run.client(Array(unknownType.dropFirst())) }
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.refusal?.detail.contains(clientFirst ? "unknown content type 1" : "ChangeCipherSpec") == true,
                "\(String(describing: run.refusal))")
        #expect(run.toServer == B.clientHello() && run.toClient.isEmpty)
    }
}
