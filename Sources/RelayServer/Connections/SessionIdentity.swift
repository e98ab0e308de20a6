/// Who and where a connection is, stamped on every audit row and log line of it.
struct SessionIdentity: Sendable {
    /// 16 hex digits, random per accepted connection.
    let session: String
    let client: String
    let listener: String

    init(client: String, listener: String) {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        self.session = String(repeating: "0", count: 16 - hex.count) + hex
        self.client = client
        self.listener = listener
    }
}
