import Synchronization

/// Set once when SIGTERM starts the drain; the status endpoint reads it at each request,
/// so clients on connections still open learn to go elsewhere.
final class DrainFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool {
        value.load(ordering: .relaxed)
    }

    func set() {
        value.store(true, ordering: .relaxed)
    }
}
