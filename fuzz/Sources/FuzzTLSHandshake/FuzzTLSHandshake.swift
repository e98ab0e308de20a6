import FuzzSupport
import RelayCore

/// The tunnel TLS inspector on a script of client and server reads, ends of stream and
/// timeouts: no trap; nothing reaches the server before a ClientHello was accepted unless the
/// tunnel was let through whole; one timer start at most; nothing after the outcome; and the
/// same outcome (a refusal's reason code, not which malformed record it names), forwarded
/// bytes and facts however each read is split.
@main
enum FuzzTLSHandshake {
    static func main() {
        FuzzDriver.run(fuzzTLSHandshake)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzTLSHandshake(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    guard let setup = input.byte() else { return 0 }
    let script = InspectorScript.read(&input)
    let whole = InspectorScript.run(script, setup: setup, split: false)
    let split = InspectorScript.run(script, setup: setup, split: true)
    invariant(whole.comparable == split.comparable, "split reads changed the result:\n\(whole)\n\(split)")
    return 0
}

/// A fuzz input read as the life of one inspected tunnel.
enum InspectorScript {
    enum Event {
        case client([UInt8])
        case server([UInt8])
        case clientEOF
        case serverEOF
        case timeout
    }

    /// The outcome and everything that went each way, spliced bytes after `.finished` included.
    struct Result: Equatable {
        var outcome: TLSInspectorAction?
        var toServer: [UInt8] = []
        var toClient: [UInt8] = []
        var facts = TLSTunnelFacts()

        /// The result as split reads must leave it. A refusal keeps its reason code but not
        /// its detail and alert: when both sides have sent something malformed, which one is
        /// named depends on whose bytes were complete first (the client's trailing record cut
        /// after its first byte lets the server's bad record be judged before it).
        var comparable: Result {
            var copy = self
            if case .refuse(let reason, _, _) = outcome { copy.outcome = .refuse(reason, detail: "", alert: nil) }
            return copy
        }
    }

    /// Each event is a byte (`% 5`); reads then take a 2-byte length (below 4 KiB) and that many bytes.
    static func read(_ input: inout FuzzInput) -> [Event] {
        var events: [Event] = []
        while let kind = input.below(5), events.count < 64 {
            switch kind {
            case 0, 1:
                let length = (Int(input.byte() ?? 0) << 8 | Int(input.byte() ?? 0)) % 4096
                var bytes: [UInt8] = []
                for _ in 0..<length {
                    guard let byte = input.byte() else { break }
                    bytes.append(byte)
                }
                events.append(kind == 0 ? .client(bytes) : .server(bytes))
            case 2: events.append(.clientEOF)
            case 3: events.append(.serverEOF)
            default: events.append(.timeout)
            }
        }
        return events
    }

    /// The setup byte: bits 0-1 the SNI rule, 2 TLS required, 3 pass on overflow, 4 pass on
    /// timeout, 5-6 the allowed versions.
    static func inspector(_ setup: UInt8) -> TLSTunnelInspector {
        let rules: [TunnelTLSPolicy.SNIRule] = [.match, .optional, .any, .match]
        let versions: [TLSVersionSet] = [.default, TLSVersionSet(TLSVersion.allCases), TLSVersionSet([.tls1_3]),
                                         TLSVersionSet([.tls1_0, .tls1_1])]
        let policy = TunnelTLSPolicy(versions: versions[Int(setup >> 5 & 3)], sni: rules[Int(setup & 3)],
                                     requirement: setup & 4 != 0 ? .required : .any)
        let settings = TLSInspectionSettings(onTimeout: setup & 16 != 0 ? .pass : .refuse,
                                             onOverflow: setup & 8 != 0 ? .pass : .refuse)
        return TLSTunnelInspector(policy: policy, connectHost: .name("app.corp.example"), settings: settings)
    }

    static func run(_ events: [Event], setup: UInt8, split: Bool) -> Result {
        var inspector = inspector(setup)
        var result = Result()
        var timerStarts = 0
        func take(_ actions: [TLSInspectorAction]) {
            for (index, action) in actions.enumerated() {
                invariant(result.outcome == nil, "an action after the outcome: \(actions)")
                switch action {
                case .toServer(let bytes):
                    invariant(!bytes.isEmpty, "an empty write")
                    result.toServer += bytes
                    // Before a pass, only an accepted ClientHello's records go to the server.
                    if actions.last != .finished {
                        invariant(inspector.facts.payload == .tls && !inspector.facts.offeredVersions.isEmpty
                                      && result.toServer.starts(with: [0x16, 0x03]),
                                  "client bytes forwarded before a ClientHello was accepted")
                    }
                case .toClient(let bytes):
                    invariant(!bytes.isEmpty, "an empty write")
                    result.toClient += bytes
                case .startTimer:
                    timerStarts += 1
                    invariant(timerStarts == 1, "a second timer start")
                case .finished, .refuse:
                    invariant(index == actions.count - 1, "an outcome before other actions: \(actions)")
                    result.outcome = action
                }
            }
            invariant(inspector.isDecided == (result.outcome != nil), "isDecided disagrees with the outcome")
        }
        func feed(_ bytes: [UInt8], toClientSide: Bool) {
            let cuts = split ? DerivedSplits.cuts(of: bytes, maxCuts: 4) : []
            var start = 0
            for end in cuts + [bytes.count] where end >= start {
                let piece = Array(bytes[start..<end])
                start = end
                if result.outcome == .finished {
                    if toClientSide { result.toServer += piece } else { result.toClient += piece }
                    continue
                }
                take(piece.withUnsafeBytes { toClientSide ? inspector.clientBytes($0) : inspector.serverBytes($0) })
            }
        }
        take(inspector.start())
        for event in events {
            switch event {
            case .client(let bytes): feed(bytes, toClientSide: true)
            case .server(let bytes): feed(bytes, toClientSide: false)
            case .clientEOF: take(inspector.clientEOF())
            case .serverEOF: take(inspector.serverEOF())
            case .timeout:
                let actions = inspector.timedOut()
                invariant(actions.isEmpty || timerStarts == 1, "a timeout acted without a timer")
                take(actions)
            }
        }
        result.facts = inspector.facts
        return result
    }
}
