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

@Suite struct CrossProcessLiveResultsTests {
    @Test func commitsOfAnotherProcessArriveAsExactChanges() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in try tx.insert(Task(id: 0, title: "mine", rank: 5, done: false, group: "p")) }
        let query = store.objects(Task.self).sorted(by: \.rank)
        let queue = DispatchQueue(label: "cross-process observer")
        let states = Locked<[[Task]]>([])
        let failures = Locked<[String]>([])
        let token = query.observe(on: queue) { change in
            switch change {
            case .initial(let results):
                let fetched = (try? results.fetch()) ?? []
                states.withLock { $0 = [fetched] }
            case .update(let results, let change):
                let new = (try? results.fetch()) ?? []
                let old = states.withLock { $0.last ?? [] }
                do {
                    let replayed = try replay(change, old: old, new: new)
                    if replayed != new { failures.withLock { $0.append("\(change): \(replayed) != \(new)") } }
                } catch {
                    failures.withLock { $0.append("\(change): \(error)") }
                }
                states.withLock { $0.append(new) }
            case .error(let error):
                failures.withLock { $0.append("\(error)") }
            }
        }
        let helper = URL(fileURLWithPath: builtTool("lode-test-helper"))
        let process = Process()
        process.executableURL = helper
        process.arguments = ["write", tmp.path, "100", "30"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        // The other process's last commit arrives within the polling interval (50 ms by default).
        let expected = try store.objects(Task.self).sorted(by: \.rank).fetch()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, states.withLock({ $0.last }) != expected {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(states.withLock { $0.last } == expected)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(states.withLock { $0.count } >= 2)
        token.cancel()
    }
}
