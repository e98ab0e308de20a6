import Testing
@testable import RelayCore

/// Cleartext, server-first protocols, the buffer bound, the timeout and ends of stream.
@Suite struct TLSInspectorLimitsTests {
    typealias B = TLSHelloBuilder
    typealias Harness = TLSInspectorHarness

    static let any = TunnelTLSPolicy(requirement: .any)
    static let required = TunnelTLSPolicy(requirement: .required)
    static let banner = Array("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n".utf8)

    @Test func aServerBannerPassesAtOnceUnderAny() {
        var run = Harness(policy: Self.any)
        #expect(run.start() == [])
        #expect(run.server(Self.banner) == [.toClient(Self.banner), .finished])
        #expect(run.inspector.facts.payload == .cleartext)
    }

    @Test func aServerBannerIsRefusedUnderRequired() {
        var run = Harness(policy: Self.required)
        #expect(run.start() == [.startTimer])
        run.server(Self.banner)
        #expect(run.refusal?.reason == .tlsRequired)
        #expect(run.refusal?.alert == nil)
        #expect(run.toClient.isEmpty)
    }

    @Test func aCleartextClientPassesUnderAnyAndIsRefusedUnderRequired() {
        let request = Array("GET / HTTP/1.1\r\n".utf8)
        var any = Harness(policy: Self.any)
        #expect(any.client(request) == [.toServer(request), .finished])
        #expect(any.inspector.facts.payload == .cleartext)
        var required = Harness(policy: Self.required)
        required.client(request)
        #expect(required.refusal?.reason == .tlsRequired)
        #expect(required.refusal?.detail == "the client opened with 0x47, not a TLS handshake")
        #expect(required.toServer.isEmpty)
    }

    @Test func aHandshakeByteFollowedByCleartextIsCleartext() {
        var run = Harness(policy: Self.any)
        #expect(run.client([0x16]) == [])
        #expect(run.client([0x41]) == [.toServer([0x16, 0x41]), .finished])
    }

    @Test(arguments: [TLSInspectionAction.refuse, .pass])
    func heldBytesOverTheBound(action: TLSInspectionAction) {
        var run = Harness(settings: TLSInspectionSettings(onOverflow: action))
        let hello = B.clientHello()
        run.client(hello)
        // Early data the server never answers: held until the bound is passed.
        let early = (0..<5).flatMap { _ in B.applicationData(16000) }
        run.client(early)
        let more = B.applicationData(16000)
        run.client(more)
        switch action {
        case .refuse:
            #expect(run.refusal?.reason == .tlsInspectionOverflow)
            #expect(run.refusal?.alert == Harness.alert(40))
            #expect(run.toServer == hello)
        case .pass:
            #expect(run.finished)
            #expect(run.toServer == hello + early + more)
        }
    }

    @Test func exactlyTheBoundIsHeldWithoutOverflow() {
        var run = Harness()
        run.client(B.clientHello())
        let record = B.applicationData(TLSInspectionSettings.bufferLimit / 4 - 5)
        run.client(record + record + record + record)
        #expect(run.outcome == nil)
        run.client([0x17])
        #expect(run.refusal?.reason == .tlsInspectionOverflow)
    }

    @Test func serverBytesHeldBeforeTheClientHelloAreBounded() {
        var run = Harness()
        run.client(Array(B.clientHello().prefix(10)))
        run.server([UInt8](repeating: 0x16, count: TLSInspectionSettings.bufferLimit + 1))
        #expect(run.refusal?.reason == .tlsInspectionOverflow)
    }

    @Test(arguments: [TLSInspectionAction.refuse, .pass])
    func theTimeout(action: TLSInspectionAction) {
        var run = Harness(settings: TLSInspectionSettings(onTimeout: action))
        let partial = Array(B.clientHello().prefix(50))
        #expect(run.timedOut() == [], "no timer yet")
        #expect(run.client(partial) == [.startTimer])
        run.timedOut()
        switch action {
        case .refuse:
            #expect(run.refusal?.reason == .tlsInspectionTimeout)
            #expect(run.refusal?.detail == "no decision within 10.0 seconds while waiting for the ClientHello")
            #expect(run.toServer.isEmpty)
        case .pass:
            #expect(run.finished && run.toServer == partial)
        }
    }

    @Test func aSilentClientTimesOutUnderRequiredWithoutAnAlert() {
        var run = Harness(policy: Self.required)
        run.start()
        run.timedOut()
        #expect(run.refusal?.reason == .tlsInspectionTimeout)
        #expect(run.refusal?.alert == nil)
    }

    @Test func aClientHelloCutShortByEOFIsNeverForwarded() {
        var run = Harness()
        run.client(Array(B.clientHello().dropLast(3)))
        run.clientEOF()
        #expect(run.refusal?.reason == .badTLSHandshake)
        #expect(run.toServer.isEmpty)
        var server = Harness()
        server.client(Array(B.clientHello().prefix(2)))
        server.serverEOF()
        #expect(server.refusal?.reason == .badTLSHandshake)
    }

    @Test func anEOFAfterAnAcceptedHelloForwardsWhatIsHeld() {
        var run = Harness()
        run.client(B.clientHello() + B.changeCipherSpec)
        run.server(Array(B.serverHello().prefix(9)))
        #expect(run.clientEOF() == [.toServer(B.changeCipherSpec), .toClient(Array(B.serverHello().prefix(9))), .finished])
    }

    @Test func anEOFBeforeTheClientSpeaks() {
        var any = Harness(policy: Self.any)
        #expect(any.serverEOF() == [.finished])
        var required = Harness(policy: Self.required)
        #expect(required.serverEOF() == [])
        required.client(B.clientHello())
        #expect(required.toServer == B.clientHello())
        var silent = Harness(policy: Self.required)
        silent.clientEOF()
        #expect(silent.refusal?.reason == .tlsRequired)
    }

    @Test func nothingIsAnsweredAfterTheDecision() {
        var run = Harness()
        run.client(B.clientHello())
        run.server(B.serverHello())
        #expect(run.inspector.isDecided)
        #expect([UInt8]([1, 2]).withUnsafeBytes { run.inspector.clientBytes($0) } == [])
        #expect([UInt8]([1, 2]).withUnsafeBytes { run.inspector.serverBytes($0) } == [])
        #expect(run.inspector.timedOut() == [] && run.inspector.clientEOF() == [] && run.inspector.serverEOF() == [])
    }
}
