import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct MigrationObserverTests {
    let tmp = TemporaryDirectory()

    /// A migration run by another opening of the store reaches live results as one full change (and
    /// says so) that replays exactly on the list mirror.
    @Test func observersOfAMigratedTypeReceiveAFullChange() throws {
        let store = try Store(at: tmp.url, types: [Task.self], migrations: [])
        try store.write { tx in
            for id in 0..<60 {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: id % 2 == 0, group: "g\(id % 4)"))
            }
        }
        let query = store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
        let replayer = ListReplayer("migration")
        let started = DispatchSemaphore(value: 0)
        let full = Locked(false)
        let token = query.observe { change in
            if case .update(_, let collection) = change, collection.wasFullyReevaluated {
                full.withLock { $0 = true }
            }
            replayer.follow(change, started: started)
        }
        defer { token.cancel() }
        #expect(started.wait(timeout: .now() + 10) == .success)
        let reshuffle = Migration("2: ranks reversed, some done, some gone, one new") { context in
            try context.updateRecords(of: "Task") { record in
                guard case .unsigned(let id) = record["id"] else { return .keep }
                if id % 7 == 0 { return .delete }
                record["rank"] = .unsigned(1000 - id)
                if id % 5 == 0 { record["done"] = .bool(false) }
                return .keep
            }
            var added = DynamicRecord()
            added["id"] = .unsigned(500)
            added["title"] = .text("new")
            added["rank"] = .unsigned(1)
            added["done"] = .bool(false)
            added["group"] = .text("g0")
            try context.insert(added, into: "Task")
        }
        let other = try Store(at: tmp.url, types: [Task.self], migrations: [reshuffle])
        let last = try other.read { $0.version }
        let deadline = Date().addingTimeInterval(10)
        while replayer.state.withLock({ $0.version }) < last && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let state = replayer.state.withLock { $0 }
        #expect(state.version == last)
        #expect(state.failures.isEmpty, "\(state.failures)")
        #expect(full.withLock { $0 }, "the change does not say it is a full re-evaluation")
        let fresh = try other.read { tx in
            try tx.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank).fetch().map(
                \.id)
        }
        #expect(state.sections == [fresh])
        #expect(fresh.first == 500)
    }
}
