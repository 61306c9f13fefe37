import Dispatch
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

/// Issue 23, finding 3: reading results called `preconditionFailure` when a record did not decode
/// (the process died). Every read now throws, and the records around it can still be read.
@Suite struct UndecodableRecordTests {
    let tmp = TemporaryDirectory()

    @Test func everyReadOfResultsThrowsAndNothingStopsTheProgram() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for id in [1, 2, 4, 5] {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: false, group: "g"))
            }
        }
        // A newer version of the app (here another store object) writes a record this one cannot read.
        let newer = try Store(
            at: tmp.url, configuration: StoreConfiguration(checksTypesAtOpen: false),
            types: [TaskWithTextRank.self])
        try newer.write { tx in
            try tx.insert(
                TaskWithTextRank(id: 3, title: "from a newer app", rank: "high", done: false, group: "g"))
        }
        func expectUndecodable(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            let error = lodeError(body, sourceLocation: sourceLocation)
            guard case .recordDoesNotDecode(let type, let key, let field, _)? = error else {
                Issue.record(
                    "expected recordDoesNotDecode, got \(String(describing: error))",
                    sourceLocation: sourceLocation)
                return
            }
            #expect(type == "Task" && key == "3" && field == "rank", sourceLocation: sourceLocation)
        }
        let all = store.objects(Task.self)
        // The keys need no decoding: count and identities answer.
        #expect(try all.count == 5)
        #expect(try all.objectIDs.count == 5)
        #expect(try all[1].id == 2)
        expectUndecodable { _ = try all[2] }
        #expect(try all[3].id == 4)
        expectUndecodable { _ = try all.fetch() }
        expectUndecodable { _ = try all.map(\.id) }
        // A cursor throws for the record alone and goes on.
        var cursor = try all.makeCursor()
        var read: [Int] = []
        var failures = 0
        while cursor.position < cursor.count {
            do {
                if let task = try cursor.next() { read.append(task.id) }
            } catch {
                failures += 1
            }
        }
        #expect(read == [1, 2, 4, 5])
        #expect(failures == 1)
        // A query that checks objects in memory throws from count too.
        let titled = all.filter(#Predicate { $0.title != "" })
        expectUndecodable { _ = try titled.count }
        expectUndecodable { _ = try titled.first }
        expectUndecodable { _ = try all.sectioned(by: \.group).sections }
        expectUndecodable { _ = try titled.live() }
        // Live results created before the record arrived deliver the error and stay usable.
        try store.write { tx in try tx.delete(Task.self, key: 3) }
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        #expect(try live.results.map(\.id) == [1, 2, 4, 5])
        try newer.write { tx in
            try tx.insert(TaskWithTextRank(id: 3, title: "again", rank: "low", done: false, group: "g"))
        }
        expectUndecodable { _ = try live.refresh() }
        #expect(try live.results.map(\.id) == [1, 2, 4, 5], "the live results stay on their version")
        // Once the record is gone, the live results advance past it.
        try newer.write { tx in _ = try tx.delete(TaskWithTextRank.self, key: 3) }
        _ = try live.refresh()
        #expect(try live.results.map(\.id) == [1, 2, 4, 5])
    }
}
