/// Deadlines of one loop's timers, earliest first. Cancelled timers are dropped lazily when
/// they reach the top, and swept out whenever the heap doubles, so cancelled entries never
/// outnumber live ones by much even with timeouts of days. Loop-confined: part of its
/// `EventLoop`.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var state: LoopTimer.State
    }

    private static let minimumCompaction = 1024
    private var entries: [Entry] = []
    private var compactAt = TimerHeap.minimumCompaction

    var count: Int { entries.count }

    mutating func push(_ entry: Entry) {
        if entries.count >= compactAt {
            compact()
        }
        entries.append(entry)
        siftUp(entries.count - 1)
    }

    /// Drops cancelled entries and restores the heap order: O(n), at most once per doubling.
    private mutating func compact() {
        entries.removeAll { $0.state.cancelled.load(ordering: .relaxed) }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) {
            siftDown(index)
        }
        compactAt = max(Self.minimumCompaction, entries.count * 2)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            if smallest == parent { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// epoll_wait's timeout: -1 with no timers, else milliseconds rounded up.
    mutating func millisecondsUntilNext(now: UInt64) -> Int32 {
        while let first = entries.first, first.state.cancelled.load(ordering: .relaxed) {
            _ = popFirst()
        }
        guard let first = entries.first else { return -1 }
        if first.deadline <= now { return 0 }
        return Int32(min((first.deadline - now + 999_999) / 1_000_000, 60_000))
    }

    /// The closure of the earliest expired, uncancelled timer, removed from the heap. On
    /// the loop: the closure is taken out of its box here.
    mutating func popExpired(now: UInt64) -> (() -> Void)? {
        while let first = entries.first, first.deadline <= now {
            let entry = popFirst()
            // The exchange decides a race with a cancel from another thread: one of them
            // sees the flag down, and only a firing that sees it down fires.
            guard !entry.state.cancelled.exchange(true, ordering: .relaxed) else { continue }
            if let fire = entry.state.fire.value.take() { return fire }
        }
        return nil
    }

    private mutating func popFirst() -> Entry {
        let first = entries[0]
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }
}
