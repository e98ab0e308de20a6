@testable import RelayCore

/// Drives a `TLSTunnelInspector` and keeps what it forwarded each way and how it ended.
struct TLSInspectorHarness {
    var inspector: TLSTunnelInspector
    var toServer: [UInt8] = []
    var toClient: [UInt8] = []
    var timerStarts = 0
    /// `.finished` or `.refuse`, once given.
    var outcome: TLSInspectorAction?

    static let host = Host.name("app.corp.example")

    init(policy: TunnelTLSPolicy = TunnelTLSPolicy(), host: Host = Self.host,
         settings: TLSInspectionSettings = TLSInspectionSettings()) {
        inspector = TLSTunnelInspector(policy: policy, connectHost: host, settings: settings)
    }

    @discardableResult
    mutating func start() -> [TLSInspectorAction] { take(inspector.start()) }

    /// Client bytes: to the inspector until it finishes, then straight to the server, as the
    /// relay splices them.
    @discardableResult
    mutating func client(_ bytes: [UInt8]) -> [TLSInspectorAction] {
        if finished {
            toServer += bytes
            return []
        }
        return take(bytes.withUnsafeBytes { inspector.clientBytes($0) })
    }

    @discardableResult
    mutating func server(_ bytes: [UInt8]) -> [TLSInspectorAction] {
        if finished {
            toClient += bytes
            return []
        }
        return take(bytes.withUnsafeBytes { inspector.serverBytes($0) })
    }

    /// `bytes` from the client, one call per `size` bytes.
    mutating func client(_ bytes: [UInt8], every size: Int) {
        for start in stride(from: 0, to: bytes.count, by: size) { client(Array(bytes[start..<min(bytes.count, start + size)])) }
    }

    mutating func server(_ bytes: [UInt8], every size: Int) {
        for start in stride(from: 0, to: bytes.count, by: size) { server(Array(bytes[start..<min(bytes.count, start + size)])) }
    }

    @discardableResult
    mutating func clientEOF() -> [TLSInspectorAction] { take(inspector.clientEOF()) }
    @discardableResult
    mutating func serverEOF() -> [TLSInspectorAction] { take(inspector.serverEOF()) }
    @discardableResult
    mutating func timedOut() -> [TLSInspectorAction] { take(inspector.timedOut()) }

    /// The refusal's reason, detail and alert, when it was refused.
    var refusal: (reason: ReasonCode, detail: String, alert: [UInt8]?)? {
        if case .refuse(let reason, let detail, let alert) = outcome { return (reason, detail, alert) }
        return nil
    }

    var finished: Bool { outcome == .finished }

    private mutating func take(_ actions: [TLSInspectorAction]) -> [TLSInspectorAction] {
        for action in actions {
            precondition(outcome == nil, "an action after the outcome: \(actions)")
            switch action {
            case .toServer(let bytes): toServer += bytes
            case .toClient(let bytes): toClient += bytes
            case .startTimer: timerStarts += 1
            case .finished, .refuse: outcome = action
            }
        }
        return actions
    }

    /// The alert record with `description`.
    static func alert(_ description: UInt8) -> [UInt8] { [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description] }
}
