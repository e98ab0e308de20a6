/// Opening the upstream of an allowed destination, as a pure state machine shared by proxy
/// sessions (CONNECT and forwarded requests) and static forwards, so both take the same
/// steps in the same order: resolve a name once, check every address it resolved to, write
/// the open row while connecting to the checked addresses in turn, and relay only once the
/// row is stored *and* a connection is up.
///
/// The trail never holds a close row whose open row it lacks, nor loses an allowed attempt:
/// a failure, or a connection that ends, while the open row's commit is pending waits for
/// that commit's answer, which decides between a close row (stored) and a refusal row (not
/// stored: nothing was relayed, and the attempt is recorded as refused).
///
/// Every call returns the one `Action` the driver carries out; the driver reports what
/// happened as an `Event`. The driver builds the rows (it knows the target, the principal
/// and what it answered): the machine says which row is due, and with which reason.
public struct UpstreamOpening: Sendable {
    /// Whether the attempt's open row exists when it starts.
    public enum OpenRow: Sendable, Equatable {
        /// Written together with the first connect.
        case toWrite
        /// Stored already: a request retried on a fresh connection keeps its open row.
        case stored
    }

    /// An address the rules refused, and the rule that refused it (nil: a built-in guard).
    public struct RefusedAddress: Sendable, Equatable {
        public var address: IPAddress
        public var rule: String?

        public init(address: IPAddress, rule: String?) {
            self.address = address
            self.rule = rule
        }
    }

    /// What the driver reports (a name's addresses go to `resolved(_:checkedBy:localHost:)`).
    public enum Event: Sendable, Equatable {
        case resolveFailed
        case connected
        /// `.upstreamRefused`, `.upstreamUnreachable` or `.upstreamTimeout`.
        case connectFailed(ReasonCode)
        case openRowCommitted
        case openRowFailed
        /// The connection ended before relaying (the client left, a timeout, shutdown).
        case abandoned(ReasonCode)
    }

    /// What the driver does next.
    public enum Action: Sendable, Equatable {
        /// Resolve the name; answer with `resolved(_:checkedBy:localHost:)` or `.resolveFailed`.
        case resolve(name: String)
        /// Write the open row, naming this address, and connect to it; both answers come back.
        case writeOpenRowAndConnect(IPAddress)
        /// Write the open row; the upstream needs no connect. Its commit's answer comes back.
        case writeOpenRow
        /// Connect to this checked address (the next after a failure, or the first of an
        /// attempt whose open row is stored).
        case connect(IPAddress)
        /// Nothing until the other of the open row's commit and the connect answers.
        case wait
        /// The open row is stored and the upstream is there: relay.
        case relay
        /// Refused with no open row stored: a refusal row with this reason (naming the
        /// refused address and its rule, when an address was refused), and the client is
        /// answered.
        case refuse(ReasonCode, RefusedAddress?)
        /// Failed after the open row was stored: its close row carries this reason (and the
        /// refused address, as for `refuse`), and the client is answered.
        case failOpened(ReasonCode, RefusedAddress?)
        /// Every address failed while the open row's commit was pending: the failure is
        /// settled by that commit's answer. A driver with no answer to give its client (a
        /// raw TCP forward) may end the attempt now with `.abandoned`.
        case failureWaitsForOpenRow(ReasonCode)
        /// The connection ended before any open row: close both sides; a refusal row with
        /// this reason, no answer (the client is gone).
        case closeUnopened(ReasonCode)
        /// The connection ended with its open row stored: close both sides; the close row
        /// carries this reason.
        case closeOpened(ReasonCode)
        /// The connection ended while the open row's commit was pending: close both sides
        /// now; the row follows the commit's answer (`recordClose` or `recordRefusal`).
        case closeWhileOpenRowPending
        /// The open row of an ended attempt is stored: its close row, with this reason.
        case recordClose(ReasonCode)
        /// The open row of an ended attempt could not be stored: a refusal row with this
        /// reason stands for the attempt instead.
        case recordRefusal(ReasonCode)
        /// A connect finished after the attempt ended: close that connection.
        case closeLateConnection
        /// A late answer for an attempt that is over (a resolution cannot be cancelled, a
        /// connect may fail as it is abandoned, a timeout may race an ending): nothing to do.
        case ignore
    }

    private enum Phase {
        /// Waiting for the addresses of a name allowed by `rule`.
        case resolving(port: UInt16, rule: String, openRow: OpenRow)
        /// Connecting to the first of `candidates` while the open row's commit is pending.
        case connectingWhileRecording(candidates: ArraySlice<IPAddress>)
        /// Connecting to the first of `candidates`; the open row is stored.
        case connecting(candidates: ArraySlice<IPAddress>)
        /// Connected, or needing no connect, while the open row's commit is pending.
        case connectedWhileRecording
        /// Every address failed, for this reason, while the open row's commit was pending.
        case failedWhileRecording(ReasonCode)
        /// The connection ended while the open row's commit was pending; the reason goes in
        /// the close row if the commit stores the open row.
        case abandonedWhileRecording(ReasonCode)
        /// Relaying, or ended with every row it owes decided.
        case ended
    }

    private var phase: Phase

    /// Starts opening `host`, allowed by the server rule `rule`: resolves a name, or checks
    /// a literal address at once.
    public static func start(host: Host, port: UInt16, rule: String, openRow: OpenRow,
                             checkedBy registry: Registry, localHost: LocalHost?) -> (UpstreamOpening, Action) {
        var opening = UpstreamOpening(phase: .resolving(port: port, rule: rule, openRow: openRow))
        let action: Action
        switch host {
        case .name(let name):
            action = .resolve(name: name)
        case .ipv4(let address):
            action = opening.resolved([.v4(address)], checkedBy: registry, localHost: localHost)
        case .ipv6(let address):
            action = opening.resolved([.v6(address)], checkedBy: registry, localHost: localHost)
        }
        return (opening, action)
    }

    /// An attempt whose upstream needs no connect (a kept-alive link checked again, or the
    /// relay answering itself): only the open row's commit is awaited.
    public static func withoutConnect() -> (UpstreamOpening, Action) {
        (UpstreamOpening(phase: .connectedWhileRecording), .writeOpenRow)
    }

    /// True while a connect is outstanding: ending now must cancel it.
    public var isConnecting: Bool {
        switch phase {
        case .connectingWhileRecording, .connecting: return true
        case .resolving, .connectedWhileRecording, .failedWhileRecording, .abandonedWhileRecording, .ended: return false
        }
    }

    /// The address being connected to, when a connect is outstanding.
    public var connectingTo: IPAddress? {
        switch phase {
        case .connectingWhileRecording(let candidates), .connecting(let candidates): return candidates.first
        case .resolving, .connectedWhileRecording, .failedWhileRecording, .abandonedWhileRecording, .ended: return nil
        }
    }

    /// True once the connection ended with the open row's commit pending: its sockets are
    /// closed, and only the commit's answer remains.
    public var isAbandoned: Bool {
        if case .abandonedWhileRecording = phase { return true }
        return false
    }

    /// The name's addresses: every one is checked, and one refusal refuses them all (a
    /// rebinding attempt looks exactly like that); the checked ones are tried in order.
    public mutating func resolved(_ addresses: [IPAddress], checkedBy registry: Registry, localHost: LocalHost?) -> Action {
        switch phase {
        case .resolving(let port, let rule, let openRow):
            return check(addresses, port: port, rule: rule, openRow: openRow, registry: registry, localHost: localHost)
        case .ended:
            // A resolution cannot be cancelled: it may answer after the attempt ended.
            return .ignore
        case .connectingWhileRecording, .connecting, .connectedWhileRecording, .failedWhileRecording,
             .abandonedWhileRecording:
            preconditionFailure("UpstreamOpening: addresses resolved in \(phase), where no resolution is outstanding")
        }
    }

    private mutating func check(_ addresses: [IPAddress], port: UInt16, rule: String, openRow: OpenRow,
                                registry: Registry, localHost: LocalHost?) -> Action {
        phase = .ended
        let check = registry.checkAll(addresses, port: port, allowRule: rule, localHost: localHost)
        if let refusal = check.refusal {
            let refused = RefusedAddress(address: refusal.address, rule: refusal.rule)
            return openRow == .stored ? .failOpened(refusal.reason, refused) : .refuse(refusal.reason, refused)
        }
        guard let first = check.ordered.first else {
            return openRow == .stored ? .failOpened(.resolveFailed, nil) : .refuse(.resolveFailed, nil)
        }
        switch openRow {
        case .toWrite:
            // The row is written while the upstream connects: both must finish before a
            // byte is relayed, and neither waits for the other.
            phase = .connectingWhileRecording(candidates: check.ordered[...])
            return .writeOpenRowAndConnect(first)
        case .stored:
            phase = .connecting(candidates: check.ordered[...])
            return .connect(first)
        }
    }

    /// Every other outcome.
    public mutating func handle(_ event: Event) -> Action {
        switch event {
        case .resolveFailed: return resolveFailed()
        case .connected: return connected()
        case .connectFailed(let reason): return connectFailed(reason)
        case .openRowCommitted: return openRowCommitted()
        case .openRowFailed: return openRowFailed()
        case .abandoned(let reason): return abandoned(reason)
        }
    }

    private mutating func resolveFailed() -> Action {
        switch phase {
        case .resolving(_, _, let openRow):
            phase = .ended
            return openRow == .stored ? .failOpened(.resolveFailed, nil) : .refuse(.resolveFailed, nil)
        case .ended:
            return .ignore
        case .connectingWhileRecording, .connecting, .connectedWhileRecording, .failedWhileRecording,
             .abandonedWhileRecording:
            preconditionFailure("UpstreamOpening: resolve failed in \(phase), where no resolution is outstanding")
        }
    }

    private mutating func connected() -> Action {
        switch phase {
        case .connectingWhileRecording:
            phase = .connectedWhileRecording
            return .wait
        case .connecting:
            phase = .ended
            return .relay
        case .abandonedWhileRecording, .ended:
            return .closeLateConnection
        case .resolving, .connectedWhileRecording, .failedWhileRecording:
            preconditionFailure("UpstreamOpening: connected in \(phase), where no connect is outstanding")
        }
    }

    private mutating func connectFailed(_ reason: ReasonCode) -> Action {
        switch phase {
        case .connectingWhileRecording(let candidates):
            let rest = candidates.dropFirst()
            if let next = rest.first {
                phase = .connectingWhileRecording(candidates: rest)
                return .connect(next)
            }
            phase = .failedWhileRecording(reason)
            return .failureWaitsForOpenRow(reason)
        case .connecting(let candidates):
            let rest = candidates.dropFirst()
            if let next = rest.first {
                phase = .connecting(candidates: rest)
                return .connect(next)
            }
            phase = .ended
            return .failOpened(reason, nil)
        case .abandonedWhileRecording, .ended:
            return .ignore
        case .resolving, .connectedWhileRecording, .failedWhileRecording:
            preconditionFailure("UpstreamOpening: connect failed in \(phase), where no connect is outstanding")
        }
    }

    private mutating func openRowCommitted() -> Action {
        switch phase {
        case .connectingWhileRecording(let candidates):
            phase = .connecting(candidates: candidates)
            return .wait
        case .connectedWhileRecording:
            phase = .ended
            return .relay
        case .failedWhileRecording(let reason):
            phase = .ended
            return .failOpened(reason, nil)
        case .abandonedWhileRecording(let reason):
            phase = .ended
            return .recordClose(reason)
        case .resolving, .connecting, .ended:
            preconditionFailure("UpstreamOpening: open row committed in \(phase), where no commit is pending")
        }
    }

    private mutating func openRowFailed() -> Action {
        switch phase {
        case .connectingWhileRecording, .connectedWhileRecording, .failedWhileRecording:
            // Fail closed: without its open row nothing is relayed.
            phase = .ended
            return .refuse(.internalError, nil)
        case .abandonedWhileRecording:
            phase = .ended
            return .recordRefusal(.internalError)
        case .resolving, .connecting, .ended:
            preconditionFailure("UpstreamOpening: open row failed in \(phase), where no commit is pending")
        }
    }

    private mutating func abandoned(_ reason: ReasonCode) -> Action {
        switch phase {
        case .resolving(_, _, .toWrite):
            phase = .ended
            return .closeUnopened(reason)
        case .resolving(_, _, .stored), .connecting:
            phase = .ended
            return .closeOpened(reason)
        case .connectingWhileRecording, .connectedWhileRecording:
            phase = .abandonedWhileRecording(reason)
            return .closeWhileOpenRowPending
        case .failedWhileRecording(let failure):
            // The connect failure ended the attempt; the loss only closes the sockets.
            phase = .abandonedWhileRecording(failure)
            return .closeWhileOpenRowPending
        case .abandonedWhileRecording, .ended:
            return .ignore
        }
    }
}
