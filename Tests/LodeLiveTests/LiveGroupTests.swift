import Dispatch
import Foundation
import LodeTesting
import ModelStorage
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct LiveGroupTests {
    @Test func aGroupAdvancesAllMembersToOneVersion() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for i in 0..<4 {
                try tx.insert(Task(id: i, title: "t\(i)", rank: i, done: i % 2 == 0, group: "x"))
            }
        }
        let open = try store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
            .live()
        let done = try store.objects(Task.self).filter(#Predicate { $0.done == true }).sorted(by: \.rank)
            .live()
        let counters = try store.objects(Counter.self).live()
        let group = LiveGroup(store: store)
        #expect(group.add(open) == 0)
        #expect(group.add(done) == 1)
        #expect(group.add(counters) == 2)
        // One commit moves a task from one query to the other and adds a counter of another type.
        try store.write { tx in
            try tx.update(Task.self, key: 1) { $0.done = true }
            try tx.insert(Counter(name: "c", value: 1))
        }
        let changes = try group.refresh()
        #expect(changes.count == 3)
        #expect(open.version == done.version && done.version == counters.version)
        for change in changes {
            switch change {
            case .results(0, let change): #expect(change.deletions == [0])
            case .results(1, let change): #expect(change.insertions == [1])
            case .results(2, let change): #expect(change.insertions == [0])
            default: Issue.record("unexpected \(change)")
            }
        }
        #expect(try group.refresh().isEmpty)
    }

    @Test func aWriteWithoutNotifyingIsNotDelivered() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "quiet")
        let updates = Locked<[String]>([])
        let signal = DispatchSemaphore(value: 0)
        let token = store.objects(Task.self).sorted(by: \.rank).observe(on: queue) { change in
            if case .update(_, let change) = change { updates.withLock { $0.append("\(change.insertions)") } }
            signal.signal()
        }
        #expect(signal.wait(timeout: .now() + 5) == .success)  // initial
        try store.write(withoutNotifying: [token]) { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
        }
        #expect(signal.wait(timeout: .now() + 0.3) == .timedOut)
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x")) }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        #expect(updates.withLock { $0 } == ["[1]"])  // only the second insert, at its new index
        token.cancel()
    }

    /// Issue 23, finding 6: the token learned which observation to silence only once the observation
    /// had started on its queue, so a silent write right after `observe` returned was delivered.
    @Test func aWriteWithoutNotifyingRightAfterObserveIsNotDelivered() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "quiet")
        let updates = Locked<[String]>([])
        let signal = DispatchSemaphore(value: 0)
        let handedOut = Locked<ObservationToken?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        // The silent write commits after the observation's results were read, before it started.
        LiveContext.of(store).hooks.onSourceMade {
            ready.wait()
            guard let token = handedOut.withLock({ $0 }) else { return }
            do {
                try store.write(withoutNotifying: [token]) { tx in
                    try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        let token = store.objects(Task.self).sorted(by: \.rank).observe(on: queue) { change in
            if case .update(_, let change) = change { updates.withLock { $0.append("\(change.insertions)") } }
            signal.signal()
        }
        handedOut.withLock { $0 = token }
        ready.signal()
        #expect(signal.wait(timeout: .now() + 5) == .success)  // initial
        LiveContext.of(store).hooks.onSourceMade(nil)
        #expect(signal.wait(timeout: .now() + 0.3) == .timedOut)
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x")) }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        #expect(updates.withLock { $0 } == ["[1]"])
        #expect(failure.withLock { $0 } == nil)
        token.cancel()
    }
}
