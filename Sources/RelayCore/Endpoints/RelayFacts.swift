/// What the relay says about itself on its status endpoint; the daemon supplies it, the
/// session only renders it.
public struct RelayFacts: Sendable {
    /// The release (`RelayVersion.current` in the daemon).
    public var version: String
    /// The `instance` directive, else the host name: which of several relays answered.
    public var instance: String
    /// Read at each status request: true once the relay stops accepting and drains, so
    /// clients see `503` and fail over before the relay goes away.
    public var isDraining: @Sendable () -> Bool

    /// Facts for one configuration; the defaults suit tests that do not look at them.
    public init(version: String = RelayVersion.current, instance: String = "dynrelay",
                isDraining: @escaping @Sendable () -> Bool = { false }) {
        self.version = version
        self.instance = instance
        self.isDraining = isDraining
    }

    /// Whether `name` may be an `instance`: 1 to 64 of `[A-Za-z0-9._-]`, so it can be
    /// shown, logged and compared without quoting.
    public static func isValidInstance(_ name: String) -> Bool {
        let scalars = name.unicodeScalars
        guard (1...64).contains(scalars.count) else { return false }
        return scalars.allSatisfy { scalar in
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": return true
            default: return false
            }
        }
    }
}
