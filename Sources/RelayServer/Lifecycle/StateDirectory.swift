import Glibc
import RelayIO

/// The state directory holds the audit trail: created 0700 if missing, never world-readable.
enum StateDirectory {
    static func prepare(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw IOError("mkdir \(path)", errno: errno)
        }
    }
}
