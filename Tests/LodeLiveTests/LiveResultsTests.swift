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

@Suite struct LiveResultsTests {
    let tmp = TemporaryDirectory()

    func randomTask(_ id: Int, _ rng: inout SeededGenerator) -> Task {
        Task(
            id: id,
            title: ["a", "b", "c", "d"].randomElement(using: &rng)!
                + String(Int.random(in: 0..<5, using: &rng)),
            rank: Int.random(in: 0..<30, using: &rng), done: Bool.random(using: &rng),
            group: ["x", "y", "z"].randomElement(using: &rng)!)
    }

    /// On a plain store and on an encrypted one, whose records and indexes are stored under hashed
    /// keys (no index order, no ranges: the planner and the live engine must not rely on key order).
    @Test(arguments: [false, true]) func refreshGivesExactChangesForRandomTransactions(encrypted: Bool) throws
    {
        var rng = SeededGenerator(seed: 0x11fe)
        // No fsync per commit: the test is about change sets, not durability.
        let store = try Store(
            at: tmp.url,
            configuration: StoreConfiguration(
                durability: .noSync, encryption: encrypted ? .key(try StoreKey.random()) : nil),
            types: [Task.self])
        let all = store.objects(Task.self)
        let queries: [(String, Results<Task>)] = [
            ("all", all),
            ("by rank", all.sorted(by: \.rank)),
            (
                "open by rank desc",
                all.filter(#Predicate { $0.done == false }).sorted(by: \.rank, ascending: false)
            ),
            (
                "group x by title",
                all.filter(#Predicate { $0.group == "x" }).sorted(by: [
                    SortDescriptor(\Task.title), SortDescriptor(\Task.rank),
                ])
            ),
            ("rank < 10", all.filter(#Predicate { $0.rank < 10 })),
            ("top 5 by rank", all.sorted(by: \.rank).limit(5)),
            ("offset 3 by title", all.sorted(by: \.title).offset(3).limit(7)),
            (
                "by done (enum-like Bool: in memory)",
                all.sorted(by: [SortDescriptor(\Task.title, comparator: .lexical)])
            ),
        ]
        var lives = try queries.map { try $0.1.live() }
        var previous = try lives.map { try $0.results.fetch() }
        var nextID = 0
        var ids: [Int] = []
        var fullChanges = 0
        // The encrypted store runs a shorter sequence: the engine is the same, the store's walks and
        // lookups are what differ (and `make test` runs this suite under ThreadSanitizer too).
        let rounds = encrypted ? 250 : 600
        for round in 0..<rounds {
            try store.write { tx in
                // Now and then more rows than move one by one: they move in batches.
                for _ in 0..<Int.random(in: round % 20 == 19 ? 9...20 : 1...6, using: &rng) {
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<4:
                        try tx.insert(randomTask(nextID, &rng))
                        ids.append(nextID)
                        nextID += 1
                    case 4..<8:
                        if let id = ids.randomElement(using: &rng) {
                            try tx.update(Task.self, key: id) { task in
                                switch Int.random(in: 0..<4, using: &rng) {
                                case 0: task.rank = Int.random(in: 0..<30, using: &rng)
                                case 1: task.done.toggle()
                                case 2: task.title += "!"
                                default: task.group = ["x", "y", "z"].randomElement(using: &rng)!
                                }
                            }
                        }
                    default:
                        if let index = ids.indices.randomElement(using: &rng) {
                            try tx.delete(Task.self, key: ids.remove(at: index))
                        }
                    }
                }
            }
            if round % 97 == 96 {
                // A bulk change: hundreds of objects in one commit.
                try store.write { tx in
                    for id in ids.prefix(300) {
                        try tx.update(Task.self, key: id) { $0.rank = ($0.rank + 7) % 30 }
                    }
                }
            }
            // Three quarters in, everything is deleted at once.
            let cleared = round == rounds * 3 / 4
            if cleared {
                // Every object deleted: the log cannot list them, so queries are evaluated again in full.
                try store.write { tx in
                    try tx.deleteAll(Task.self)
                    for _ in 0..<5 {
                        try tx.insert(randomTask(nextID, &rng))
                        ids.append(nextID)
                        nextID += 1
                    }
                }
                ids = Array(ids.suffix(5))
            }
            for (index, live) in lives.enumerated() {
                let change = try live.refresh()
                let fresh = try queries[index].1.copyingQuery(of: queries[index].1).fetch()
                let now = try live.results.fetch()
                #expect(
                    now == fresh, "round \(round) \(queries[index].0): live results differ from a fresh query"
                )
                if let change {
                    if change.wasFullyReevaluated && cleared { fullChanges += 1 }
                    let replayed = try replay(change, old: previous[index], new: fresh)
                    #expect(replayed == fresh, "round \(round) \(queries[index].0): \(change)")
                }
                previous[index] = fresh
            }
            // Results without a sort come in primary-key order, encrypted or not.
            #expect(previous[0].map(\.id) == previous[0].map(\.id).sorted(), "round \(round)")
        }
        #expect(fullChanges == queries.count)  // every query took the full path after deleteAll
        // One more live set from scratch agrees with the survivors.
        lives = try queries.map { try $0.1.live() }
        #expect(try lives.map { try $0.results.fetch() } == previous)
    }

    @Test func changesFromAnotherWriterInTheSameProcessAndCoalescing() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        let live = try store.objects(Task.self).sorted(by: \.rank).live()
        #expect(try live.refresh() == nil)
        try store.write { tx in
            for i in 0..<3 { try tx.insert(Task(id: i, title: "t\(i)", rank: i, done: false, group: "x")) }
        }
        try store.write { tx in try tx.update(Task.self, key: 0) { $0.rank = 10 } }
        try store.write { tx in try tx.delete(Task.self, key: 1) }
        // Three commits, one change from the version the live results had.
        let change = try #require(try live.refresh())
        #expect(change.insertions == [0, 1])
        #expect(change.deletions.isEmpty)
        #expect(try live.results.fetch().map(\.id) == [2, 0])
        #expect(try live.refresh() == nil)
    }

    @Test func modificationsAndMovesAreReportedPrecisely() throws {
        let store = try Store.temporary(types: [Task.self])
        try store.write { tx in
            for i in 0..<5 {
                try tx.insert(Task(id: i, title: "t\(i)", rank: i * 10, done: false, group: "x"))
            }
        }
        let byRank = store.objects(Task.self).sorted(by: \.rank)
        var table = try ListMirror(byRank)
        var change = try store.change(of: byRank) { tx in
            try tx.update(Task.self, key: 2) { $0.title = "renamed" }
        }
        #expect(change.withoutVersions == .expected(modified: [2]))
        try table.replay(change, against: byRank)
        // A sort value that changes without passing another row: reloaded in place, not moved.
        change = try store.change(of: byRank) { tx in try tx.update(Task.self, key: 2) { $0.rank = 25 } }
        #expect(change.withoutVersions == .expected(modified: [2]))
        #expect(changesText(change.storageUpdate()) == ["update [2]"])
        try table.replay(change, against: byRank)
        change = try store.change(of: byRank) { tx in try tx.update(Task.self, key: 0) { $0.rank = 45 } }
        #expect(change.withoutVersions == .expected(movedAndModified: [(from: 0, to: 4)]))
        #expect(changesText(change.storageUpdate()) == ["delete [0]", "insert [4]"])
        try table.replay(change, against: byRank)
        #expect(try byRank.reevaluated().fetch().map(\.id) == [1, 2, 3, 4, 0])
        #expect(change.difference(from: [0, 1, 2, 3, 4], to: [1, 2, 3, 4, 0]).inferringMoves().count == 2)
    }

    @Test func observersGetTheInitialResultsThenEveryCommitNeverInsideAWrite() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "observer")
        let received = Locked<[String]>([])
        let insideWrite = Atomic<Bool>(false)
        let sawWrite = Atomic<Bool>(false)
        let delivered = DispatchSemaphore(value: 0)
        let token = store.objects(Task.self).sorted(by: \.rank).observe(on: queue) { change in
            if insideWrite.load(ordering: .sequentiallyConsistent) {
                sawWrite.store(true, ordering: .sequentiallyConsistent)
            }
            switch change {
            case .initial(let results):
                let count = (try? results.count) ?? -1
                received.withLock { $0.append("initial \(count)") }
            case .update(let results, let change):
                let count = (try? results.count) ?? -1
                received.withLock { $0.append("update \(count) \(change.insertions)") }
            case .error(let error): received.withLock { $0.append("error \(error)") }
            }
            delivered.signal()
        }
        #expect(delivered.wait(timeout: .now() + 5) == .success)
        let notifier = LiveContext.of(store).makeNotifier(for: store)
        try store.write { tx in
            insideWrite.store(true, ordering: .sequentiallyConsistent)
            try tx.insert(Task(id: 1, title: "one", rank: 1, done: false, group: "x"))
            // The notifier looks from a thread of its own while the write is open (as its timer
            // may), and what it scheduled has run before the write ends: nothing may be delivered.
            let looked = DispatchSemaphore(value: 0)
            Thread {
                notifier.storeDidCommit()
                looked.signal()
            }.start()
            looked.wait()
            queue.sync {}
            insideWrite.store(false, ordering: .sequentiallyConsistent)
        }
        #expect(delivered.wait(timeout: .now() + 5) == .success)
        #expect(received.withLock { $0 } == ["initial 0", "update 1 [0]"])
        let deliveredDuringWrite = sawWrite.load(ordering: .sequentiallyConsistent)
        #expect(!deliveredDuringWrite)
        token.cancel()
        // A second observation on the same queue witnesses the next commit: once its update has run and
        // the queue has drained, a delivery to the cancelled one would have run too.
        let witnessed = DispatchSemaphore(value: 0)
        let witness = store.objects(Task.self).observe(on: queue) { _ in witnessed.signal() }
        // Its initial results first: an observation starts on its queue, and a commit made before it
        // started is in its initial results, not an update (under load the commit could come first).
        #expect(witnessed.wait(timeout: .now() + 5) == .success)
        try store.write { tx in try tx.insert(Task(id: 2, title: "two", rank: 2, done: false, group: "x")) }
        #expect(witnessed.wait(timeout: .now() + 5) == .success)
        queue.sync {}
        #expect(delivered.wait(timeout: .now()) == .timedOut, "a cancelled token stops deliveries")
        #expect(received.withLock { $0 }.count == 2)
        witness.cancel()
    }

    @Test func changesAsAnAsyncSequence() async throws {
        try await onDedicatedExecutor {
            let store = try Store(at: tmp.url, types: [Task.self])
            var iterator = store.objects(Task.self).changes.makeAsyncIterator()
            guard case .initial(let initial)? = await iterator.next() else {
                Issue.record("expected the initial results")
                return
            }
            #expect(try initial.isEmpty)
            try await store.write { tx in
                try tx.insert(Task(id: 7, title: "seven", rank: 7, done: true, group: "y"))
            }
            guard case .update(let results, let change)? = await iterator.next() else {
                Issue.record("expected an update")
                return
            }
            #expect(change.insertions == [0])
            #expect(try results.fetch().map(\.id) == [7])
        }
    }

    @Test func theChangeLogRecordsNetChangesPerCommit() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
            try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x"))
            try tx.update(Task.self, key: 1) { $0.rank = 5 }  // insert + update = insert
            try tx.delete(Task.self, key: 2)  // insert + delete = nothing
        }
        let entries = try store.read { tx in
            try tx.lmdb.entries(in: store.changeLog!).map {
                try CBORDecoder().decode(ChangeLogEntry.self, from: $0.value)
            }
        }
        #expect(entries.count == 1)
        #expect(entries.first?.changes.map(\.op) == [.insert])
        #expect(entries.first?.changes.first?.key == Data(try KeyEncoder().encode(1)))
    }
}
