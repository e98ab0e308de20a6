import RelayCore
// `Options` itself is auditbench's file, linked here: one option parser for both programs.

extension Options {
    /// The `--relay` URL as the library's relay list.
    func relays() throws -> [RelayEndpoint] {
        let entry = try string("relay")
        do {
            return try RelayList.parse([entry])
        } catch {
            throw UsageError(message: "--relay \(entry): \(error)")
        }
    }

    /// A port number.
    func port(_ key: String) throws -> UInt16 {
        let text = try string(key)
        guard let port = UInt16(text), port > 0 else { throw UsageError(message: "--\(key): not a port: \(text)") }
        return port
    }
}
