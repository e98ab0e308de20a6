/// Reads the cleartext start of a tunnel's end-to-end TLS from both directions and decides
/// whether the tunnel may carry it, without terminating it and without I/O: every call returns
/// the actions the relay takes next, in order.
///
/// Call `start()` once when the tunnel is established, then report every read of either side
/// (`clientBytes`, `serverBytes`), each end of stream, and the expiry of the timer it asks for,
/// until an action is `.finished` or `.refuse`; after that it answers nothing.
///
/// The rules:
/// - **Nothing is forwarded before it is judged.** Client bytes are held until the ClientHello
///   they complete is accepted, then forwarded up to the end of its record; later client records
///   (ChangeCipherSpec, alerts, early data) are held until the ServerHello decision. Server bytes
///   are held until the final ServerHello is judged; then everything held goes out in order,
///   followed by `.finished`. A HelloRetryRequest is judged like a ServerHello and forwarded up
///   to the end of its record, and inspection waits for the second ClientHello and the real
///   ServerHello.
/// - **Classifying the client's first bytes**, waiting for as many as it takes (three at most):
///   `0x16 0x03` is a TLS handshake (inspected; the timer starts unless `start()` armed it);
///   another TLS record type (`0x14`, `0x15`, `0x17` then `0x03`) is `bad-tls-handshake`, a record
///   before the ClientHello; an SSLv2-compatible hello (high bit set, message type 1) is
///   `bad-tls-handshake` too. Anything else is cleartext: forwarded and `.finished` under
///   `requirement == .any`, `tls-required` under `.required`.
/// - **Server speaks first** (server bytes before any client byte): forwarded and `.finished`
///   at once under `.any`, so banners never wait for the client; `tls-required` under `.required`,
///   where `start()` arms the timer so that a silent client cannot hold the tunnel open.
/// - **ClientHello.** Offered versions are `supported_versions` (GREASE and unknown codes left
///   out) when present; otherwise every version from 1.0 up to `legacy_version`, capped at 1.2.
///   None of them allowed: `tls-version-refused` (`offered=1.0,1.1 allowed=1.2,1.3`). The server
///   name must be one host_name entry; it is normalised like a CONNECT host (case, one trailing
///   dot) and compared with the tunnel's host: different is `sni-mismatch` unless the rule says
///   `sni=any`; absent (no extension, or only other name types) is `sni-missing` unless `sni` is
///   `optional` or `any`. Two host_name entries, an empty name, duplicated extensions, and any
///   length that runs past or falls short of what encloses it are `bad-tls-handshake`. Every
///   ClientHello is judged so, the second after a HelloRetryRequest included. ECH is judged on
///   its outer name.
/// - **ServerHello.** The version is `supported_versions` when present (1.3 or later only), else
///   `legacy_version`. One the client did not offer, or a cipher suite it did not offer, or a
///   second HelloRetryRequest, is `bad-tls-handshake`; one not allowed is `tls-version-refused`
///   (`negotiated=1.1 allowed=1.2,1.3`).
/// - **Records.** Split anywhere, several messages in one record and one message across many
///   are read alike. A record may carry at most 16 KiB (application data 18 KiB), handshake
///   records are never empty, and no other record may come between the pieces of a handshake
///   message. ChangeCipherSpec and alerts are tolerated (held) from either side once a
///   ClientHello was read; application data only from the client, as early data.
/// - **Alerts to the client** (record version 0x0303, level fatal): `protocol_version` (70) for
///   versions, `unrecognized_name` (112) for a mismatched name, `handshake_failure` (40) for a
///   missing one and for overflow and timeout, `decode_error` (50) for malformed bytes,
///   `unexpected_message` (10) for a record or message out of place, `illegal_parameter` (47)
///   for a ServerHello that contradicts its ClientHello. None when the client does not speak
///   TLS (cleartext, SSLv2, a silent client).
/// - **Limits.** At most `TLSInspectionSettings.bufferLimit` bytes are held per direction;
///   needing more (or a handshake message longer than that) applies `settings.onOverflow`, and
///   the timer's expiry applies `settings.onTimeout`: `refuse` ends the tunnel
///   (`tls-inspection-overflow`, `tls-inspection-timeout`), `pass` forwards everything held and
///   finishes. Records are read only within the limit, so the decision does not depend on how
///   the bytes were split into reads.
/// - **End of stream before a decision.** If the client's held bytes end inside a record or a
///   handshake message (a ClientHello cut short), they are dropped and the tunnel is refused
///   `bad-tls-handshake`: unjudged hello bytes never reach the server. Otherwise everything held
///   is forwarded and the inspector finishes: a handshake cut short after its ClientHello was
///   accepted is TLS's problem, not a way around policy. Before the client's first byte, its end
///   finishes under `.any` and is `tls-required` under `.required`; the server's end finishes
///   under `.any` and, under `.required`, changes nothing (the client's bytes are still judged).
public struct TLSTunnelInspector: Sendable {
    /// Where the handshake is.
    enum Phase: Equatable {
        /// No client byte yet.
        case awaitingClient
        /// Client bytes that cannot be classified yet.
        case classifying
        /// Reading a ClientHello: the first, or the second after a HelloRetryRequest.
        case clientHello(afterRetry: Bool)
        /// A ClientHello was accepted; reading the server's answer.
        case serverHello(afterRetry: Bool)
        /// Finished or refused.
        case decided
    }

    /// Which side bytes came from.
    enum Side: String {
        case client
        case server
    }

    let policy: TunnelTLSPolicy
    let connectHost: Host
    let settings: TLSInspectionSettings
    var phase = Phase.awaitingClient
    var client = TLSRecordStream()
    var server = TLSRecordStream()
    var timerArmed = false
    /// The ClientHello the next ServerHello answers.
    var lastClientHello: TLSClientHello?
    /// What was read so far, for the audit row.
    public internal(set) var facts = TLSTunnelFacts()

    /// An inspector for a tunnel opened to `connectHost` (the normalised CONNECT host) under the
    /// rule's `policy`.
    public init(policy: TunnelTLSPolicy, connectHost: Host, settings: TLSInspectionSettings) {
        self.policy = policy
        self.connectHost = connectHost
        self.settings = settings
    }

    /// Whether the inspector has finished or refused: it answers nothing more.
    public var isDecided: Bool { phase == .decided }

    /// The tunnel is established. Under `tunnel-tls=required` the timer starts now.
    public mutating func start() -> [TLSInspectorAction] {
        guard policy.requirement == .required, phase == .awaitingClient, !timerArmed else { return [] }
        timerArmed = true
        return [.startTimer]
    }

    /// The client sent `bytes`.
    public mutating func clientBytes(_ bytes: UnsafeRawBufferPointer) -> [TLSInspectorAction] {
        guard !isDecided, !bytes.isEmpty else { return [] }
        client.append(bytes)
        if phase == .awaitingClient { phase = .classifying }
        return settle(.client)
    }

    /// The server sent `bytes`.
    public mutating func serverBytes(_ bytes: UnsafeRawBufferPointer) -> [TLSInspectorAction] {
        guard !isDecided, !bytes.isEmpty else { return [] }
        server.append(bytes)
        if phase == .awaitingClient {
            facts.payload = .cleartext
            guard policy.requirement == .any else {
                return refuse(TLSInspectionRefusal(reason: .tlsRequired, detail: "the server spoke first", alert: nil))
            }
            return allow()
        }
        return settle(.server)
    }

    /// The client closed its side.
    public mutating func clientEOF() -> [TLSInspectorAction] {
        endOfStream(.client)
    }

    /// The server closed its side.
    public mutating func serverEOF() -> [TLSInspectorAction] {
        endOfStream(.server)
    }

    /// The timer started by `.startTimer` expired.
    public mutating func timedOut() -> [TLSInspectorAction] {
        guard timerArmed, !isDecided else { return [] }
        switch settings.onTimeout {
        case .pass:
            return allow()
        case .refuse:
            return refuse(TLSInspectionRefusal(
                reason: .tlsInspectionTimeout, detail: "no decision within \(settings.timeout) while \(waitingFor)",
                alert: facts.payload == .tls ? .handshakeFailure : nil))
        }
    }

    /// Reads what `side` sent as far as the phase allows, then applies the buffer limit.
    private mutating func settle(_ side: Side) -> [TLSInspectorAction] {
        var actions: [TLSInspectorAction] = []
        do {
            try read(&actions)
        } catch let refusal {
            if refusal.reason == .tlsInspectionOverflow { return actions + overflow(side, refusal.detail) }
            return actions + refuse(refusal)
        }
        guard !isDecided else { return actions }
        for (stream, name) in [(client, Side.client), (server, Side.server)]
        where stream.held.count > TLSInspectionSettings.bufferLimit {
            return actions + overflow(name, "more than \(TLSInspectionSettings.bufferLimit) \(name.rawValue) bytes held")
        }
        return actions
    }

    private mutating func overflow(_ side: Side, _ detail: String) -> [TLSInspectorAction] {
        switch settings.onOverflow {
        case .pass:
            return allow()
        case .refuse:
            return refuse(TLSInspectionRefusal(reason: .tlsInspectionOverflow, detail: "\(detail) while \(waitingFor)",
                                               alert: facts.payload == .tls ? .handshakeFailure : nil))
        }
    }

    private mutating func endOfStream(_ side: Side) -> [TLSInspectorAction] {
        guard !isDecided else { return [] }
        if phase == .awaitingClient {
            switch (side, policy.requirement) {
            case (_, .any): return allow()
            case (.client, .required):
                return refuse(TLSInspectionRefusal(reason: .tlsRequired, detail: "the client closed without sending", alert: nil))
            case (.server, .required): return []
            }
        }
        guard !client.hasIncompleteBytes else {
            return refuse(.malformed("the \(side.rawValue) closed while a client record or hello was incomplete"))
        }
        return allow()
    }

    /// What the inspector waits for, for details.
    private var waitingFor: String {
        switch phase {
        case .awaitingClient, .classifying: return "waiting for the client's first bytes"
        case .clientHello(let afterRetry): return afterRetry ? "waiting for the second ClientHello" : "waiting for the ClientHello"
        case .serverHello: return "waiting for the ServerHello"
        case .decided: return "decided"
        }
    }

    /// Decided and allowed: everything held goes out, client bytes first.
    mutating func allow() -> [TLSInspectorAction] {
        phase = .decided
        var actions: [TLSInspectorAction] = []
        let toServer = client.forwardAll()
        let toClient = server.forwardAll()
        if !toServer.isEmpty { actions.append(.toServer(toServer)) }
        if !toClient.isEmpty { actions.append(.toClient(toClient)) }
        actions.append(.finished)
        return actions
    }

    /// Refused: nothing held goes anywhere.
    mutating func refuse(_ refusal: TLSInspectionRefusal) -> [TLSInspectorAction] {
        phase = .decided
        client.discard()
        server.discard()
        return [refusal.action]
    }
}
