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

@Suite struct KeyPathFilterTests {
    @Test func changesToOtherFieldsAreNotModifications() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for i in 0..<3 { try tx.insert(Task(id: i, title: "t\(i)", rank: i, done: false, group: "x")) }
        }
        let query = store.objects(Task.self).sorted(by: \.rank)
        let titles = try query.live(keyPaths: [\Task.title])
        let everything = try query.live()
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.group = "y" } }
        let filtered = try titles.refresh()
        #expect(filtered?.isEmpty == true, "\(String(describing: filtered))")
        #expect(try everything.refresh()?.modifications == [.init(old: 1, new: 1)])
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.title = "renamed" } }
        #expect(try titles.refresh()?.modifications == [.init(old: 1, new: 1)])
        // Joining, leaving and moving always count.
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.rank = 9 } }
        #expect(try titles.refresh()?.moves == [CollectionChange.Move(from: 0, to: 2)])
        // The log records which fields changed.
        let last = try store.read { tx in
            try tx.lmdb.entries(in: store.changeLog!).map {
                try CBORDecoder().decode(ChangeLogEntry.self, from: $0.value)
            }.last
        }
        #expect(last?.changes.first?.fields == ["rank"])
    }
}
