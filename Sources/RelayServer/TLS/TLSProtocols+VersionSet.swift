import RelayCore
import RelayIO

extension TLSProtocols {
    /// The versions of a configured set, for `TLSContext.server(…)` and `.client(…)`
    /// (RelayIO does not see RelayCore's `TLSVersionSet`).
    public init(_ versions: TLSVersionSet) {
        self.init(wire: versions.versions.map(\.wire))
    }
}
