// TEMPORARY: replaced by the helper pools and the GSS acceptor when their branches land.
enum HelperVerdict: Sendable { case ok, err, broken, overloaded }
enum HelperTokenAnswer: Sendable {
    case `continue`([UInt8])
    case done(user: String, token: [UInt8]?)
    case failed
    case broken
}
final class ConcurrentHelperPool: Sendable {
    func basic(user: String, password: String, completion: @escaping @Sendable (HelperVerdict) -> Void) { completion(.broken) }
    func digestHA1(user: String, realm: String, completion: @escaping @Sendable ([UInt8]?) -> Void) { completion(nil) }
}
final class HelperConversation: @unchecked Sendable {
    func send(token: [UInt8], first: Bool, completion: @escaping @Sendable (HelperTokenAnswer) -> Void) { completion(.broken) }
    func finish() {}
}
final class StatefulHelperPool: Sendable {
    func begin() -> HelperConversation? { nil }
}
struct AuthHelpers: Sendable {
    var basic: ConcurrentHelperPool?
    var digest: ConcurrentHelperPool?
    var ntlm: StatefulHelperPool?
    var negotiate: StatefulHelperPool?
}
