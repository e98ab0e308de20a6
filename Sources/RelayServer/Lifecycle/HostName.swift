import Glibc
import RelayCore

/// The host name, the default `instance` a relay reports on its status endpoint.
enum HostName {
    /// `gethostname(2)`; "dynrelay" when it fails or gives nothing a status may carry.
    static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "dynrelay" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return RelayFacts.isValidInstance(name) ? name : "dynrelay"
    }
}
