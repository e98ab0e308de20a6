/// What a request's body is, as far as sending it a second time goes (after a redirect or
/// on another relay).
public enum RequestBodyKind: Hashable, Sendable {
    /// No body.
    case none
    /// A body that can be produced again from its start (bytes in memory, a file).
    case replayable
    /// A stream that can be read once; once sending began, it is gone.
    case oneShot
}
