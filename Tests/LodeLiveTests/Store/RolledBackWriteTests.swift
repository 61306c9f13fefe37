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

@Suite struct RolledBackWriteTests {
    struct Refused: Error, Equatable {}

    func task(_ id: Int, rank: Int = 0, group: String = "g", done: Bool = false) -> Task {
        Task(id: id, title: "t\(id)", rank: rank, done: done, group: group)
    }

    @Test func aRolledBackWriteReadsItsOwnWritesAndLeavesNothing() throws {
        let store = try Store.temporary(types: [Task.self])
        try store.write { tx in try tx.insert(task(1, rank: 5)) }
        let version = try store.read { $0.version }
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        let seen = try store.write(rollingBack: true) { tx in
            try tx.insert(task(2, rank: 1, group: "h"))
            try tx.insert(task(3, rank: 9, group: "h"))
            try tx.update(Task.self, key: 1) { $0.rank = 0 }
            _ = try tx.delete(Task.self, key: 3)
            // Inside, every read sees the write so far: counts, queries on indexes, lookups.
            #expect(try tx.count(Task.self) == 2)
            #expect(try tx.objects(Task.self).filter(#Predicate { $0.group == "h" }).fetch().map(\.id) == [2])
            #expect(try tx.object(Task.self, key: 3) == nil)
            return try tx.objects(Task.self).sorted(by: \.rank).fetch().map(\.id)
        }
        #expect(seen == [1, 2])
        // Outside, nothing happened: no record, no version, no change for observers.
        #expect(try store.objects(Task.self).sorted(by: \.rank).fetch().map(\.id) == [1])
        #expect(try store.read { $0.version } == version)
        #expect(try live.refresh() == nil)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        // An error is the caller's, as itself; `rollingBack: false` is a plain write.
        #expect(throws: Refused()) { try store.write(rollingBack: true) { _ in throw Refused() } }
        try store.write(rollingBack: false) { tx in try tx.insert(task(4)) }
        #expect(try store.objects(Task.self).fetch().count == 2)
    }

    @Test func anAsyncRolledBackWriteRunsOffTheCallersTask() async throws {
        try await onDedicatedExecutor {
            let store = try Store.temporary(types: [Task.self])
            let counted = try await store.write(rollingBack: true) { tx in
                try tx.insert(Task(id: 1, title: "a", rank: 0, done: false, group: "g"))
                return try tx.count(Task.self)
            }
            #expect(counted == 1)
            #expect(try await store.read { try $0.count(Task.self) } == 0)
            let kept = try await store.write(rollingBack: false) { tx in
                try tx.insert(Task(id: 2, title: "b", rank: 0, done: false, group: "g"))
                return tx.version
            }
            #expect(try await store.read { $0.version } == kept)
        }
    }

    @Test func aReadOnlyStoreRefusesARolledBackWriteToo() throws {
        let tmp = TemporaryDirectory()
        _ = try Store(at: tmp.url, types: [Task.self])
        let readOnly = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        #expect(throws: LodeError.readOnly(path: tmp.path)) { try readOnly.write(rollingBack: true) { _ in } }
    }
}
