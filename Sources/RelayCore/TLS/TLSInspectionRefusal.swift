/// Why the inspector ends a tunnel: the reason code for the audit row, a detail for people,
/// and the alert the client is sent (nil when the client is not speaking TLS).
struct TLSInspectionRefusal: Error, Equatable {
    var reason: ReasonCode
    var detail: String
    var alert: TLSAlert?

    /// Bytes that do not parse as the handshake they claim to be.
    static func malformed(_ detail: String) -> TLSInspectionRefusal {
        TLSInspectionRefusal(reason: .badTLSHandshake, detail: detail, alert: .decodeError)
    }

    /// A record or message that well-formed TLS never sends at this point.
    static func unexpected(_ detail: String) -> TLSInspectionRefusal {
        TLSInspectionRefusal(reason: .badTLSHandshake, detail: detail, alert: .unexpectedMessage)
    }

    /// A ServerHello that contradicts the ClientHello it answers.
    static func illegal(_ detail: String) -> TLSInspectionRefusal {
        TLSInspectionRefusal(reason: .badTLSHandshake, detail: detail, alert: .illegalParameter)
    }

    var action: TLSInspectorAction {
        .refuse(reason, detail: detail, alert: alert?.record)
    }
}
