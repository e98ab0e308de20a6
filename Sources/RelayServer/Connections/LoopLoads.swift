import Synchronization

/// How many connections each loop holds, so a connection can be placed on the least loaded
/// one. The kernel wakes whichever loop sits first in the listener's queue, so clients that
/// arrive one after another while the loops are idle all land on the same loop; for plain
/// tunnels the kernel splices and that costs little, but a TLS connection's bytes are
/// encrypted on its loop, and four TLS streams on one loop leave the other core idle.
/// haproxy's listeners dispatch to the least loaded thread for the same reason.
final class LoopLoads: Sendable {
    private final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    private let counts: [Count]

    init(loops: Int) {
        counts = (0..<max(1, loops)).map { _ in Count() }
    }

    /// The loop a connection accepted on loop `accepting` should live on, counted there
    /// until `release`: the least loaded loop when it holds fewer connections than
    /// `accepting`, else `accepting` itself (staying costs no thread hop).
    func place(acceptedOn accepting: Int) -> Int {
        var target = accepting
        var least = counts[accepting].value.load(ordering: .relaxed)
        for (index, count) in counts.enumerated() where index != accepting {
            let load = count.value.load(ordering: .relaxed)
            if load < least {
                least = load
                target = index
            }
        }
        counts[target].value.add(1, ordering: .relaxed)
        return target
    }

    /// A connection `place` counted on `loop` is gone.
    func release(_ loop: Int) {
        counts[loop].value.subtract(1, ordering: .relaxed)
    }

    /// Connections counted on `loop` now.
    func count(_ loop: Int) -> Int {
        counts[loop].value.load(ordering: .relaxed)
    }
}
