import Testing
@testable import RelayCore

/// The fixed-seed short run of the handshake fuzzing: real and built hellos mutated a few
/// thousand ways, each fed whole and split, checked for the shapes every outcome must have.
@Suite struct TLSInspectorMutationTests {
    typealias B = TLSHelloBuilder

    static let allowedReasons: Set<ReasonCode> = [.badTLSHandshake, .tlsVersionRefused, .sniMismatch, .sniMissing,
                                                  .tlsRequired, .tlsInspectionOverflow]

    static let seeds: [([UInt8], [UInt8])] = [
        (RealTLSHellos.tls13ClientHello, RealTLSHellos.tls13ServerHello),
        (RealTLSHellos.tls12ClientHello, RealTLSHellos.tls12ServerHello),
        (RealTLSHellos.tls10ClientHello, RealTLSHellos.tls10ServerHello),
        (RealTLSHellos.hrrClientHello, RealTLSHellos.hrrRetryRequest),
        (B.clientHello(suites: [B.grease, 0x1301], versions: [B.grease, 0x0304]), B.serverHello()),
    ]

    /// One run's result: the outcome and everything forwarded each way.
    struct Result: Equatable {
        var outcome: TLSInspectorAction?
        var toServer: [UInt8]
        var toClient: [UInt8]
        var facts: TLSTunnelFacts
    }

    static func run(_ client: [UInt8], _ server: [UInt8], piece: Int, policy: TunnelTLSPolicy) -> Result {
        var run = TLSInspectorHarness(policy: policy)
        run.start()
        run.client(client, every: piece)
        run.server(server, every: piece)
        if run.outcome == nil { run.clientEOF() }
        return Result(outcome: run.outcome, toServer: run.toServer, toClient: run.toClient, facts: run.inspector.facts)
    }

    static func mutate(_ bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<5, using: &random) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &random)
            case 2: bytes.remove(at: at)
            case 3: bytes.insert(UInt8.random(in: 0...255, using: &random), at: at)
            default: bytes.removeLast(Int.random(in: 0...min(8, bytes.count - at), using: &random))
            }
        }
        return bytes
    }

    @Test func mutatedHellosEndInAnAllowedShapeHoweverSplit() {
        var random = SplitMix64(state: 0x7153_4841_4E44)
        let policies = [TunnelTLSPolicy(), TunnelTLSPolicy(versions: TLSVersionSet(TLSVersion.allCases), sni: .any),
                        TunnelTLSPolicy(sni: .optional, requirement: .required)]
        var outcomes: [String: Int] = [:]
        for round in 0..<3000 {
            let (hello, answer) = Self.seeds[round % Self.seeds.count]
            let client = Bool.random(using: &random) ? Self.mutate(hello, &random) : hello
            let server = client == hello ? Self.mutate(answer, &random) : answer
            let policy = policies[round % policies.count]
            let whole = Self.run(client, server, piece: max(1, client.count + server.count), policy: policy)
            let split = Self.run(client, server, piece: 1 + round % 7, policy: policy)
            #expect(whole == split, "round \(round)")
            switch whole.outcome {
            case .finished:
                // Forwarded bytes are what the peers sent, in order, nothing added.
                #expect(client.starts(with: whole.toServer) && server.starts(with: whole.toClient), "round \(round)")
                outcomes["finished", default: 0] += 1
            case .refuse(let reason, _, let alert):
                #expect(Self.allowedReasons.contains(reason), "round \(round): \(reason)")
                #expect(alert == nil || alert?.count == 7, "round \(round)")
                #expect(client.starts(with: whole.toServer), "round \(round)")
                outcomes[reason.rawValue, default: 0] += 1
            default:
                Issue.record("round \(round) ended without an outcome")
            }
        }
        // The mutations reach both sides of the decision, not only the parser's first check.
        #expect(outcomes["finished", default: 0] > 100)
        #expect(outcomes[ReasonCode.badTLSHandshake.rawValue, default: 0] > 100)
    }
}
