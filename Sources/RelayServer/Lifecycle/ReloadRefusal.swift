/// A reload the running daemon cannot apply in place (a listener changing kind, the state
/// directory moving): the whole reload is refused with these words, and a restart applies it.
struct ReloadRefusal: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
