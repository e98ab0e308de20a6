import FuzzSupport
import RelayCore

/// What the environment of a fuzzed session knows from the actions the session returned:
/// the answers it owes (a resolution, a connect, a commit, an authentication), the sockets
/// that exist, the header timer, and the audit rows written. Each action is checked against
/// it as it is applied; `Event` legality is read from it.
struct SessionWorld {
    /// One open row and what became of it.
    struct OpenRow {
        var event: AuditEvent
        var target: String?
        /// nil while the commit is owed.
        var committed: Bool?
        var closed = false
        var tunnelled = false

        var isSettled: Bool { committed == false || closed || tunnelled }
    }

    let knowsLocalHost: Bool
    var requiresAuth: Bool

    /// The session closed the client or handed it to a tunnel: only audit rows may follow,
    /// and the only event still delivered is an owed commit's answer (the server's driver
    /// drops every other, as `ProxySession.handle` asks).
    private(set) var ended = false
    var clientEOF = false
    private(set) var headerTimerArmed = false

    private(set) var resolveOwed = false
    private(set) var connectOwed: IPAddress?
    private(set) var authOwed = false
    /// Open rows whose commit is owed, oldest first.
    private(set) var commitsOwed: [Int] = []
    /// The last resolver answer held an address the relay must never reach: nothing of it
    /// may be connected to.
    private(set) var answerIsSuspect = false

    private(set) var upstreamOpen = false
    /// The upstream said EOF or failed: it is not read again.
    private(set) var upstreamDone = false
    /// The next bytes sent upstream start a request head (a new request or a new connection).
    private var headDue = false
    /// Bytes sent upstream since the open row (or since the connection it is now on was
    /// made), and to the client since the open row: what its close row must account for.
    private var sentUp = 0
    private var sentDown = 0

    private(set) var openRows: [OpenRow] = []
    private(set) var tunnelPlaces: [TunnelQuotaPlace] = []

    init(knowsLocalHost: Bool, requiresAuth: Bool) {
        self.knowsLocalHost = knowsLocalHost
        self.requiresAuth = requiresAuth
    }

    // MARK: Answers the environment gives

    mutating func answeredResolve(_ addresses: [IPAddress]?) {
        resolveOwed = false
        answerIsSuspect = addresses?.contains { !SessionFixtures.mayConnect(to: $0, knowingLocalHost: knowsLocalHost) } ?? false
    }

    mutating func answeredConnect(success: Bool) {
        connectOwed = nil
        if success {
            upstreamOpen = true
            upstreamDone = false
            headDue = true
            sentUp = 0
        }
    }

    mutating func answeredAuth() {
        authOwed = false
    }

    /// Pops the oldest owed commit; false when none is owed.
    mutating func answeredCommit(_ committed: Bool) -> Bool {
        guard !commitsOwed.isEmpty else { return false }
        openRows[commitsOwed.removeFirst()].committed = committed
        return true
    }

    mutating func upstreamEnded() {
        upstreamDone = true
    }

    // MARK: Actions the session returns

    /// Applies `actions` in order, checking each; `session` is the driver's to take the
    /// tunnel quota place from, as the driver does.
    mutating func apply(_ actions: [ProxySessionAction], to session: inout ProxySession) {
        var endedHere = false
        for action in actions {
            invariant(!endedHere, "\(action) after the client was closed in the same answer")
            if ended {
                guard case .audit(_, false) = action else {
                    return invariant(false, "\(action) after the session ended")
                }
            }
            switch action {
            case .sendToClient(let bytes):
                sentDown += bytes.count
            case .sendToUpstream(let bytes):
                sentUpstream(bytes)
                sentUp += bytes.count
            case .resolve(let name, _):
                invariant(!resolveOwed && connectOwed == nil && !upstreamOpen, "resolve with another step under way")
                invariant(HostNormalizer.normalize(name, bracketed: false) == .success(.name(name)), "resolving \(name)")
                resolveOwed = true
                answerIsSuspect = false
            case .connect(let address, _):
                invariant(connectOwed == nil && !upstreamOpen && !resolveOwed, "a second upstream connection at once")
                invariant(!answerIsSuspect, "connect to \(address) from an answer that named a guarded address")
                invariant(SessionFixtures.mayConnect(to: address, knowingLocalHost: knowsLocalHost), "connect to \(address)")
                connectOwed = address
            case .audit(let entry, let awaitCommit):
                audited(entry, awaitCommit: awaitCommit)
            case .startTunnel(let context, let established, _):
                invariant(upstreamOpen, "tunnel without a connected upstream")
                guard let row = openRows.last, row.event == .tunnelOpen, row.committed == true, !row.closed, !row.tunnelled else {
                    return invariant(false, "tunnel before its open row was committed")
                }
                invariant(row.target == context.target, "tunnel to \(context.target), open row for \(String(describing: row.target))")
                invariant(established.starts(with: Array("HTTP/1.1 200 ".utf8)), "tunnel established with \(established)")
                openRows[openRows.count - 1].tunnelled = true
                if let place = session.takeTunnelQuotaPlace() { tunnelPlaces.append(place) }
                upstreamOpen = false
                ended = true
                endedHere = true
            case .authenticate:
                invariant(!authOwed && requiresAuth, "authentication asked twice or without auth configured")
                authOwed = true
            case .countRefusal(let reason, _):
                invariant(reason == .headerTimeout, "counted refusal \(reason)")
            case .startHeaderTimer:
                invariant(!headerTimerArmed, "header timer armed twice")
                headerTimerArmed = true
            case .stopHeaderTimer:
                invariant(headerTimerArmed, "header timer stopped while not armed")
                headerTimerArmed = false
            case .closeUpstream, .resetUpstream:
                upstreamOpen = false
                connectOwed = nil
            case .closeClient, .resetClient:
                // What the driver's close does: the timer goes, the place goes back.
                headerTimerArmed = false
                session.takeTunnelQuotaPlace()?.release()
                ended = true
                endedHere = true
            }
        }
        if endedHere {
            invariant(!upstreamOpen && connectOwed == nil, "the session ended with an upstream left open")
        }
        invariant(session.isFinished == ended, "isFinished \(session.isFinished) after the session \(ended ? "ended" : "went on")")
        invariant(!ended || !session.wantsClientBytes, "an ended session wants client bytes")
    }

    /// The first bytes of each request on a connection are its head, rewritten for the
    /// upstream: relayed only under a committed open row, and without proxy credentials.
    private mutating func sentUpstream(_ bytes: [UInt8]) {
        invariant(upstreamOpen, "bytes for an upstream that is not connected")
        guard let row = openRows.last, row.event == .requestOpen, row.committed == true, !row.closed else {
            return invariant(false, "bytes relayed upstream before a committed open row")
        }
        guard headDue else { return }
        headDue = false
        var parser = HTTPRequestHeadParser(limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxHeaders: 1000))
        guard case .complete(let head, _) = bytes.withUnsafeBytes({ parser.parse($0) }) else {
            return invariant(false, "the first bytes sent upstream are no request head")
        }
        invariant(!head.headers.contains("proxy-authorization"), "proxy credentials sent upstream")
    }

    private mutating func audited(_ entry: AuditEntry, awaitCommit: Bool) {
        let opens = entry.event == .tunnelOpen || entry.event == .requestOpen
        invariant(awaitCommit == opens, "\(entry.event) row with awaitCommit \(awaitCommit)")
        if opens {
            invariant(openRows.allSatisfy { $0.isSettled }, "a new open row while \(openRows.last!) is unsettled")
            openRows.append(OpenRow(event: entry.event, target: entry.target))
            commitsOwed.append(openRows.count - 1)
            headDue = true
            sentUp = 0
            sentDown = 0
            return
        }
        guard entry.event == .tunnelClose || entry.event == .requestClose else { return }
        let opening: AuditEvent = entry.event == .tunnelClose ? .tunnelOpen : .requestOpen
        guard let last = openRows.indices.last, openRows[last].event == opening, openRows[last].committed == true,
              !openRows[last].closed, !openRows[last].tunnelled else {
            return invariant(false, "\(entry.event) row without a stored open row: \(openRows)")
        }
        invariant(openRows[last].target == entry.target, "close row for \(String(describing: entry.target))")
        // Never more than was relayed; all of it when the exchange completed.
        invariant(entry.bytesUp <= sentUp && entry.bytesDown <= sentDown,
                  "close row counts \(entry.bytesUp) up, \(entry.bytesDown) down; \(sentUp) and \(sentDown) were sent")
        if entry.reason == .completed {
            invariant(entry.bytesUp == sentUp && entry.bytesDown == sentDown,
                      "completed row counts \(entry.bytesUp) up, \(entry.bytesDown) down; \(sentUp) and \(sentDown) were sent")
        }
        openRows[last].closed = true
    }
}
