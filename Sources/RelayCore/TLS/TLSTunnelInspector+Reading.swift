/// Reading each direction's records as far as the phase allows.
extension TLSTunnelInspector {
    /// Reads until nothing more can be read or a decision is made. Reading one side can make
    /// the other's held bytes readable (an accepted ClientHello lets the server's be read).
    mutating func read(_ actions: inout [TLSInspectorAction]) throws(TLSInspectionRefusal) {
        var progress = true
        while progress, !isDecided {
            switch phase {
            case .awaitingClient, .decided:
                return
            case .classifying:
                progress = try classify(&actions)
            case .clientHello(let afterRetry):
                progress = try readClient(&actions, afterRetry: afterRetry)
            case .serverHello(let afterRetry):
                progress = try readClient(&actions, afterRetry: afterRetry)
                if !isDecided, case .serverHello = phase {
                    progress = try readServer(&actions, afterRetry: afterRetry) || progress
                }
            }
        }
    }

    /// Classifies the client's first bytes; false while more are needed.
    private mutating func classify(_ actions: inout [TLSInspectorAction]) throws(TLSInspectionRefusal) -> Bool {
        let first = client.held
        let recordTypes: ClosedRange<UInt8> = 0x14...0x17
        if recordTypes.contains(first[0]) {
            guard first.count >= 2 else { return false }
            if first[1] == 0x03 {
                facts.payload = .tls
                guard first[0] == TLSRecordStream.ContentType.handshake.rawValue else {
                    throw .unexpected("a record of content type \(first[0]) before the ClientHello")
                }
                phase = .clientHello(afterRetry: false)
                if !timerArmed {
                    timerArmed = true
                    actions.append(.startTimer)
                }
                return true
            }
        } else if first[0] & 0x80 != 0 {
            guard first.count >= 3 else { return false }
            if first[2] == 0x01 {
                facts.payload = .tls
                throw TLSInspectionRefusal(reason: .badTLSHandshake, detail: "an SSLv2-compatible ClientHello", alert: nil)
            }
        }
        facts.payload = .cleartext
        guard policy.requirement == .any else {
            // Only the first byte: how many more arrived with it depends on how the reads fell.
            throw TLSInspectionRefusal(reason: .tlsRequired, detail: "the client opened with 0x\(String(first[0], radix: 16)), not a TLS handshake",
                                       alert: nil)
        }
        actions += allow()
        return true
    }

    /// Reads the client's complete records; true when one was read.
    private mutating func readClient(_ actions: inout [TLSInspectorAction], afterRetry: Bool) throws(TLSInspectionRefusal) -> Bool {
        var progress = false
        while !isDecided, phase == .clientHello(afterRetry: afterRetry) || phase == .serverHello(afterRetry: afterRetry),
              let record = try client.nextRecord(limit: TLSInspectionSettings.bufferLimit) {
            progress = true
            let readingHello = phase == .clientHello(afterRetry: afterRetry)
            switch record.type {
            case .handshake:
                guard readingHello else {
                    throw .unexpected("a handshake record from the client before the ServerHello")
                }
                let messages = try client.messages(in: record.fragment)
                guard let message = messages.first else { continue }
                guard message.type == 1 else {
                    throw .unexpected("handshake message type \(message.type) from the client instead of a ClientHello")
                }
                guard messages.count == 1, client.partialMessage.isEmpty else {
                    throw .unexpected("handshake data after the ClientHello in its record")
                }
                try judge(clientHello: message.body)
                actions.append(.toServer(client.forward(upTo: record.end)))
                phase = .serverHello(afterRetry: afterRetry)
            case .changeCipherSpec, .alert, .applicationData:
                guard client.partialMessage.isEmpty else {
                    throw .unexpected("a \(record.type) record inside a fragmented ClientHello")
                }
                // Before the first ClientHello was read, nothing but its records may come.
                guard afterRetry || !readingHello else {
                    throw .unexpected("a \(record.type) record before the ClientHello was complete")
                }
                if record.type == .changeCipherSpec { try Self.checkChangeCipherSpec(record) }
            }
        }
        return progress
    }

    /// Reads the server's complete records up to its first handshake message; true when one
    /// was read.
    private mutating func readServer(_ actions: inout [TLSInspectorAction], afterRetry: Bool) throws(TLSInspectionRefusal) -> Bool {
        var progress = false
        while !isDecided, phase == .serverHello(afterRetry: afterRetry),
              let record = try server.nextRecord(limit: TLSInspectionSettings.bufferLimit) {
            progress = true
            switch record.type {
            case .handshake:
                let messages = try server.messages(in: record.fragment)
                guard let message = messages.first else { continue }
                guard message.type == 2 else {
                    throw .unexpected("handshake message type \(message.type) from the server instead of a ServerHello")
                }
                let hello = try judge(serverHello: message.body, afterRetry: afterRetry)
                guard hello.isHelloRetryRequest else {
                    actions += allow()
                    return true
                }
                guard messages.count == 1, server.partialMessage.isEmpty else {
                    throw .unexpected("handshake data after the HelloRetryRequest in its record")
                }
                facts.helloRetry = true
                actions.append(.toClient(server.forward(upTo: record.end)))
                phase = .clientHello(afterRetry: true)
            case .changeCipherSpec, .alert:
                guard server.partialMessage.isEmpty else {
                    throw .unexpected("a \(record.type) record inside a fragmented ServerHello")
                }
                if record.type == .changeCipherSpec { try Self.checkChangeCipherSpec(record) }
            case .applicationData:
                throw .unexpected("application data from the server before its ServerHello")
            }
        }
        return progress
    }

    /// TLS 1.3's compatibility ChangeCipherSpec is the one byte 0x01 (RFC 8446 §5), as in 1.2.
    private static func checkChangeCipherSpec(_ record: TLSRecordStream.Record) throws(TLSInspectionRefusal) {
        guard record.fragment.elementsEqual([0x01]) else {
            throw .malformed("a ChangeCipherSpec record of \(record.fragment.count) bytes other than 0x01")
        }
    }
}
