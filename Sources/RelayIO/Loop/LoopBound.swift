/// A value that belongs to one loop, in a form that may cross threads: it can be stored in
/// a `Sendable` type, captured by a task handed to `EventLoop.execute`, or returned from
/// `EventLoop.sync`, but it can be read or changed only on its loop, which every access
/// checks (in release builds too: one compare of thread ids).
///
/// Loop-confined classes (`StreamSocket`, `BufferedWriter`, `SplicePump`, `IORegistration`,
/// `LoopTimer`, `PipePool`...) are not `Sendable`, so the compiler keeps them on the thread
/// that holds them; this is how one reaches its loop from elsewhere, checked, instead of a
/// class-wide `@unchecked Sendable` trusted by comment.
///
/// A struct: changing `value` changes this copy only. Share a mutable slot with
/// `LoopBoundBox`.
public struct LoopBound<Value>: @unchecked Sendable {  // every access checks the loop's thread
    /// The loop whose thread alone may touch `value`.
    public let loop: EventLoop
    // Inlinable, like the accessors below: a connection binds and reads these per event
    // from other modules, where an unspecialized generic call would copy through value
    // witnesses.
    @usableFromInline var wrapped: Value

    /// Binds `value`, which lives on `loop`; call on the loop. The check is what keeps a
    /// value of another thread from being carried onto the loop while its thread keeps it.
    @inlinable
    public init(_ value: Value, on loop: EventLoop) {
        loop.preconditionInLoop()
        self.loop = loop
        self.wrapped = value
    }

    /// Binds a value no one else holds (`sending`: the compiler checks that the caller
    /// gives it up), from any thread: a socket wrapper made for a descriptor, before the
    /// loop first sees it.
    @inlinable
    public init(sending value: sending Value, on loop: EventLoop) {
        self.loop = loop
        self.wrapped = value
    }

    /// The value; crashes off its loop.
    @inlinable
    public var value: Value {
        get {
            loop.preconditionInLoop()
            return wrapped
        }
        _modify {
            loop.preconditionInLoop()
            yield &wrapped
        }
    }
}

/// A mutable slot that belongs to one loop and is shared by reference: the loop-confined
/// part of an object that other threads also hold (a pending timer a test cancels, a
/// listener's per-loop watch). Every access checks the loop, as `LoopBound` does.
public final class LoopBoundBox<Value>: @unchecked Sendable {  // every access checks the loop's thread
    /// The loop whose thread alone may touch `value`.
    public let loop: EventLoop
    private var wrapped: Value

    private init(unchecked value: Value, on loop: EventLoop) {
        self.loop = loop
        self.wrapped = value
    }

    /// A box holding `value`, which lives on `loop`; call on the loop.
    public convenience init(_ value: Value, on loop: EventLoop) {
        loop.preconditionInLoop()
        self.init(unchecked: value, on: loop)
    }

    /// A box holding a value no one else holds (`sending`), made on any thread.
    public convenience init(sending value: sending Value, on loop: EventLoop) {
        self.init(unchecked: value, on: loop)
    }

    /// An empty box, made on any thread: `nil` is nobody's value, and whatever is put in
    /// later is put in on the loop.
    public static func empty<Wrapped>(on loop: EventLoop) -> LoopBoundBox<Value> where Value == Wrapped? {
        LoopBoundBox(unchecked: nil, on: loop)
    }

    /// The value; crashes off its loop.
    public var value: Value {
        get {
            loop.preconditionInLoop()
            return wrapped
        }
        _modify {
            loop.preconditionInLoop()
            yield &wrapped
        }
    }
}
