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

@Suite struct ChangeLogPruningTests {
    @Test func prunedLogsFallBackToAnExactFullReevaluation() throws {
        let tmp = TemporaryDirectory()
        let writer = try Store(
            at: tmp.url, configuration: StoreConfiguration(changeLogRetention: .zero), types: [Task.self])
        try writer.write { tx in
            for i in 0..<5 { try tx.insert(Task(id: i, title: "t\(i)", rank: i, done: false, group: "x")) }
        }
        // A second Store on the same directory, standing in for another process: its live results
        // do not hold back the writer's pruning.
        let observer = try Store(at: tmp.url, types: [Task.self])
        let live = try observer.objects(Task.self).sorted(by: \.rank).live()
        let before = try live.results.fetch()
        let kept = try writer.objects(Task.self).sorted(by: \.rank).live()  // this one holds the log back
        for i in 0..<130 { try writer.write { tx in try tx.update(Task.self, key: i % 5) { $0.rank += 1 } } }
        let kept2 = try #require(try kept.refresh())
        #expect(!kept2.wasFullyReevaluated)
        let floor = try writer.read { tx in try ChangeLogPruning.floor(in: tx.lmdb, meta: writer.meta) }
        #expect(floor != nil)
        // Release the writer's live results: the next pruning passes the observer's version.
        _ = consume kept
        for i in 0..<130 {
            try writer.write { tx in try tx.update(Task.self, key: i % 5) { $0.title += "." } }
        }
        let change = try #require(try live.refresh())
        #expect(change.wasFullyReevaluated)
        let after = try live.results.fetch()
        #expect(after == (try writer.objects(Task.self).sorted(by: \.rank).fetch()))
        #expect(try replay(change, old: before, new: after) == after)
    }
}
