import Glibc
import RelayCore
import RelayIO

extension ServerShared {
    /// The reason an upstream connect failed with `error`, as proxy sessions and static
    /// forwards both refuse it; running out of descriptors is named (and logged) as such,
    /// not taken for an unreachable server.
    func connectFailureReason(_ error: IOError) -> ReasonCode {
        switch error.errno {
        case ECONNREFUSED: return .upstreamRefused
        case ETIMEDOUT: return .upstreamTimeout
        case EMFILE, ENFILE:
            noteOutOfDescriptors()
            return .outOfDescriptors
        default: return .upstreamUnreachable
        }
    }
}
