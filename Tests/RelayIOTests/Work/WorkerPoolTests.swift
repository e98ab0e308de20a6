import Dispatch
@testable import RelayIO
import Synchronization
import Testing

extension RelayIOSuite {
    /// The pool's admission: at most `threads` jobs run, `maxWaiting` wait, the rest are
    /// refused; `submitIfIdle` runs a job only when a thread is free and nothing waits.
    @Suite struct WorkerPoolTests {
        @Test func jobsBeyondTheThreadsWaitAndBeyondTheQueueAreRefused() {
            let pool = WorkerPool(label: "test.pool", threads: 1, maxWaiting: 1)
            let gate = DispatchSemaphore(value: 0)
            let ran = Atomic<Int>(0)
            let done = DispatchGroup()
            done.enter()
            #expect(pool.submit { gate.wait(); ran.add(1, ordering: .relaxed); done.leave() })
            done.enter()
            #expect(pool.submit { ran.add(1, ordering: .relaxed); done.leave() }, "one may wait")
            #expect(!pool.submit { Issue.record("a refused job ran") }, "the queue is full")
            #expect(!pool.submitIfIdle { Issue.record("an idle-only job ran while busy") })
            gate.signal()
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(ran.load(ordering: .relaxed) == 2)
        }

        @Test func anIdleOnlyJobRunsWhenAThreadIsFree() {
            let pool = WorkerPool(label: "test.pool", threads: 1, maxWaiting: 4)
            let ran = DispatchSemaphore(value: 0)
            #expect(pool.submitIfIdle { ran.signal() })
            #expect(ran.wait(timeout: .now() + 5) == .success)
        }
    }
}
