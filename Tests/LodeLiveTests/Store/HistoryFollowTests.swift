import Foundation
import Testing

@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Following the history: every commit — this process's and another's — reaches a follower once, in
/// order, with its values, typed for the app's models.
@Suite struct HistoryFollowTests {
    @Test func aFollowerGetsEveryCommitOfEveryProcessInOrder() async throws {
        let directory = TemporaryDirectory("history-follow")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        let start = try await store.read { $0.historyToken }
        // Made before the follower starts: it catches up with them first.
        try await store.write { tx in
            try tx.insert(Task(id: 1, title: "one", rank: 1, done: false, group: "g"))
        }
        let follower = _Concurrency.Task<[HistoryTransaction], any Error> {
            var seen: [HistoryTransaction] = []
            for try await commit in store.historyUpdates(since: start) {
                seen.append(commit)
                if seen.count == 12 { break }
            }
            return seen
        }
        let helper = builtTool("lode-test-helper")
        for id in 2..<7 {
            let result = try shell("'\(helper)' commit-one '\(directory.url.path)' insert \(id)")
            #expect(result.status == 0, "\(result.err)")
            try await store.write { tx in try tx.update(Task.self, key: 1) { $0.rank += 1 } }
        }
        try await store.write { tx in try tx.delete(Task.self, key: 3) }
        let seen = try await follower.value
        #expect(seen.map(\.version) == seen.map(\.version).sorted())
        #expect(Set(seen.map(\.version)).count == 12)
        #expect(seen == (try await store.read { try $0.history(since: start) }))
        // Typed: the inserted object, a changed field, the deleted object's last values.
        let inserted = try #require(seen[1].changes.first)
        #expect(
            try inserted.object(as: Task.self)
                == Task(id: 2, title: "task 2", rank: 2, done: false, group: "p"))
        let updated = try #require(seen[2].changes.first)
        #expect(updated.kind == .update && updated.fields == ["rank"])
        #expect(try updated.value(of: "rank", as: Int.self, before: true) == 1)
        #expect(try updated.value(of: "rank", as: Int.self) == 2)
        #expect(try updated.object(as: Task.self) == nil)
        let deleted = try #require(seen.last?.changes.first)
        #expect(try deleted.object(as: Task.self)?.title == "task 3")
        #expect(try await store.read { try $0.history(of: Task.self, since: start) }.count == 12)
    }

    @Test func aFollowerFromATokenTheHistoryNoLongerHoldsGetsATypedError() async throws {
        let directory = TemporaryDirectory("history-follow-pruned")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .keep(versions: 3)),
            types: [Task.self])
        let start = try await store.read { $0.historyToken }
        for id in 0..<70 {
            try await store.write { tx in
                try tx.upsert(Task(id: 0, title: "\(id)", rank: id, done: false, group: "g"))
            }
        }
        await #expect {
            for try await _ in store.historyUpdates(since: start) {}
        } throws: { error in
            guard case .historyUnavailable = error as? LodeError else { return false }
            return true
        }
    }
}
