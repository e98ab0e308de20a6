/// The relay's release, as `dynrelay version` prints it and its status endpoint reports it.
public enum RelayVersion {
    /// The version string; one place, so the command and the endpoint never disagree.
    public static let current = "0.1.0"
}
