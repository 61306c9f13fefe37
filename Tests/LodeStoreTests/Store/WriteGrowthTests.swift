import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct WriteGrowthTests {
    let tmp = TemporaryDirectory()

    /// When another process commits while a write grows the map, LMDB cannot replay the write on the
    /// new version: nothing is written, and `Store.write` runs the write again itself, so the app sees
    /// one successful write holding both its objects and the other process's.
    @Test func aWriteThatMeetsAnotherProcessWhileGrowingIsRunAgain() throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(initialMapSize: 1 << 20), types: [Task.self])
        try store.write { try $0.insert(Task(id: 0, title: "base", rank: 0, done: false, group: "x")) }
        let environment = try store.environment()
        let path = tmp.path
        environment.testHookBeforeReplay = {
            environment.testHookBeforeReplay = nil  // once
            let result = try? shell("'\(builtTool("lode-test-helper"))' write '\(path)' 5000 1")
            #expect(result?.status == 0, "\(result?.err ?? "")")
        }
        var runs = 0
        let long = String(repeating: "x", count: 4000)
        try store.write { tx in
            runs += 1
            for id in 1...600 {
                try tx.insert(Task(id: id, title: long + "\(id)", rank: id, done: false, group: "x"))
            }
        }
        #expect(runs == 2)
        let count = try store.read { try $0.count(Task.self) }
        #expect(count == 601 + 1)  // ours, the base object and the other process's task 5000
        #expect(try store.read { try $0.object(Task.self, key: 5000) } != nil)
    }
}
