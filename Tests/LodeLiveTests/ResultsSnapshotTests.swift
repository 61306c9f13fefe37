import Dispatch
import Foundation
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

@Suite struct ResultsSnapshotTests {
    @Test func resultsAndSectionsBecomeDiffableSnapshotsThatApplyToASnapshotStorage() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for (id, group) in ["b", "a", "b"].enumerated() {
                try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: group))
            }
        }
        let sectioned = store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group)
        let snapshot = try sectioned.snapshot()
        #expect(snapshot.sectionIdentifiers == ["a", "b"])
        #expect(
            try snapshot.itemIdentifiers(inSection: "b") == [
                try ObjectID(Task.self, key: 0), try ObjectID(Task.self, key: 2),
            ])
        let storage = SnapshotStorage<String, ObjectID>()
        storage.apply(snapshot)
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.group = "a" } }
        let delegate = MirroringSnapshotDelegate(storage)
        storage.delegate = delegate
        storage.apply(try store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group).snapshot())
        #expect(delegate.failures.isEmpty, "\(delegate.failures)")
        #expect(try store.objects(Task.self).snapshot(section: "all").itemIdentifiers.count == 3)
    }
}
