import Testing
@testable import RelayCore

/// The inspector on hellos real OpenSSL peers sent, whole and split every way.
@Suite struct TLSInspectorRealHelloTests {
    typealias Real = RealTLSHellos

    static let all = TunnelTLSPolicy(versions: TLSVersionSet(TLSVersion.allCases))

    @Test(arguments: [
        (Real.tls13ClientHello, Real.tls13ServerHello, TLSVersion.tls1_3, "TLS_AES_256_GCM_SHA384"),
        (Real.tls12ClientHello, Real.tls12ServerHello, .tls1_2, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        (Real.tls11ClientHello, Real.tls11ServerHello, .tls1_1, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
        (Real.tls10ClientHello, Real.tls10ServerHello, .tls1_0, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    ])
    func aRealHandshakeIsForwardedAsJudgedAndAudited(clientHello: [UInt8], serverHello: [UInt8], version: TLSVersion,
                                                     cipher: String) {
        var run = TLSInspectorHarness(policy: Self.all)
        #expect(run.client(clientHello) == [.startTimer, .toServer(clientHello)])
        #expect(run.server(serverHello) == [.toClient(serverHello), .finished])
        let facts = run.inspector.facts
        #expect(facts.payload == .tls)
        #expect(facts.sni == "app.corp.example")
        #expect(facts.negotiatedVersion == version)
        #expect(facts.auditVersion == version.auditName)
        #expect(facts.auditCipher == cipher)
        #expect(facts.offeredVersions.contains(version))
        #expect(facts.ech == false && facts.helloRetry == false)
    }

    @Test(arguments: [
        (Real.tls10ClientHello, "offered=1.0 allowed=1.2,1.3"),
        (Real.tls11ClientHello, "offered=1.0,1.1 allowed=1.2,1.3"),
    ])
    func oldVersionsAreRefusedWithAProtocolVersionAlert(clientHello: [UInt8], detail: String) {
        var run = TLSInspectorHarness()
        run.client(clientHello)
        #expect(run.refusal?.reason == .tlsVersionRefused)
        #expect(run.refusal?.detail == detail)
        #expect(run.refusal?.alert == TLSInspectorHarness.alert(70))
        #expect(run.toServer.isEmpty)
    }

    @Test func onlyTLS13AllowedRefusesATLS12ClientHello() {
        var run = TLSInspectorHarness(policy: TunnelTLSPolicy(versions: TLSVersionSet([.tls1_3])))
        run.client(Real.tls12ClientHello)
        #expect(run.refusal?.detail == "offered=1.0,1.1,1.2 allowed=1.3")
    }

    @Test func aServerHelloChoosingAVersionNotAllowedIsRefused() {
        // The 1.1 client offers 1.0 and 1.1; with 1.0 allowed its hello passes, the 1.1 answer does not.
        var run = TLSInspectorHarness(policy: TunnelTLSPolicy(versions: TLSVersionSet([.tls1_0, .tls1_2])))
        run.client(Real.tls11ClientHello)
        run.server(Real.tls11ServerHello)
        #expect(run.refusal?.reason == .tlsVersionRefused)
        #expect(run.refusal?.detail == "negotiated=1.1 allowed=1.0,1.2")
        #expect(run.refusal?.alert == TLSInspectorHarness.alert(70))
        #expect(run.toClient.isEmpty)
        #expect(run.inspector.facts.negotiatedVersion == .tls1_1)
    }

    @Test func anUpperCaseSNIWithATrailingDotMatches() {
        var run = TLSInspectorHarness(policy: Self.all)
        run.client(Real.tls11ClientHello)
        #expect(run.toServer == Real.tls11ClientHello)
        #expect(run.inspector.facts.sni == "app.corp.example")
    }

    @Test(arguments: [(TunnelTLSPolicy.SNIRule.match, false), (.optional, true), (.any, true)])
    func aHelloWithoutSNI(rule: TunnelTLSPolicy.SNIRule, passes: Bool) {
        var run = TLSInspectorHarness(policy: TunnelTLSPolicy(sni: rule), host: .ipv4(IPv4Address(strict: "10.1.2.3")!))
        run.client(Real.nosniClientHello)
        run.server(Real.nosniServerHello)
        if passes {
            #expect(run.finished && run.toServer == Real.nosniClientHello && run.toClient == Real.nosniServerHello)
        } else {
            #expect(run.refusal?.reason == .sniMissing)
            #expect(run.refusal?.alert == TLSInspectorHarness.alert(40))
            #expect(run.toServer.isEmpty)
        }
        #expect(run.inspector.facts.sni == nil)
    }

    @Test func aRealHelloRetryRequestIsForwardedAndTheSecondHelloJudged() {
        var run = TLSInspectorHarness()
        run.client(Real.hrrClientHello)
        // The HelloRetryRequest goes to the client at once; the compatibility CCS after it waits.
        let retryRecordLength = 5 + Int(Real.hrrRetryRequest[3]) << 8 + Int(Real.hrrRetryRequest[4])
        #expect(run.server(Real.hrrRetryRequest) == [.toClient(Array(Real.hrrRetryRequest.prefix(retryRecordLength)))])
        #expect(run.client(Real.hrrSecondClientHello) == [.toServer(Real.hrrSecondClientHello)])
        run.server(Real.hrrServerHello)
        #expect(run.finished)
        #expect(run.toServer == Real.hrrClientHello + Real.hrrSecondClientHello)
        #expect(run.toClient == Real.hrrRetryRequest + Real.hrrServerHello)
        #expect(run.inspector.facts.helloRetry)
        #expect(run.inspector.facts.auditVersion == "TLSv1.3")
    }

    @Test func aRealClientHelloSplitAtEveryOffsetReadsTheSame() {
        let hello = Real.tls13ClientHello, answer = Real.tls13ServerHello
        for cut in 0...hello.count {
            var run = TLSInspectorHarness()
            run.client(Array(hello[..<cut]))
            #expect(run.toServer.isEmpty || cut == hello.count, "cut \(cut)")
            run.client(Array(hello[cut...]))
            #expect(run.toServer == hello, "cut \(cut)")
            run.server(answer)
            #expect(run.finished && run.toClient == answer, "cut \(cut)")
        }
        for cut in 0...answer.count {
            var run = TLSInspectorHarness()
            run.client(hello)
            run.server(Array(answer[..<cut]))
            // The ServerHello's record decides; the ChangeCipherSpec after it is then relayed raw.
            #expect(run.toClient.isEmpty == (cut < answer.count - 6), "cut \(cut)")
            run.server(Array(answer[cut...]))
            #expect(run.finished && run.toClient == answer, "cut \(cut)")
        }
    }

    @Test func aRealClientHelloOneBytePerReadIsJudgedOnItsLastByte() {
        let hello = Real.tls13ClientHello
        var run = TLSInspectorHarness()
        for index in hello.indices {
            let actions = run.client([hello[index]])
            if index == hello.count - 1 {
                #expect(actions == [.toServer(hello)])
            } else {
                #expect(actions.allSatisfy { $0 == .startTimer }, "byte \(index): \(actions)")
            }
        }
        #expect(run.timerStarts == 1)
        run.server(Real.tls13ServerHello, every: 1)
        #expect(run.finished && run.toClient == Real.tls13ServerHello)
    }

    @Test func aRealClientHelloInOneBytePerRecordIsReassembled() {
        let message = Array(Real.tls13ClientHello.dropFirst(5))
        let fragmented = TLSHelloBuilder.records(message, size: 1)
        var run = TLSInspectorHarness()
        run.client(fragmented, every: 7)
        #expect(run.toServer == fragmented)
        #expect(run.inspector.facts.sni == "app.corp.example")
        run.server(Real.tls13ServerHello)
        #expect(run.finished)
    }
}
