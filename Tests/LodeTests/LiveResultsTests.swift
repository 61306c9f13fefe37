import Dispatch
import Foundation
import Lode
import LodeTestSupport
import LodeTesting
import ModelStorage
import Synchronization
import Testing

@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore

struct Task: Persistable, Equatable, CustomStringConvertible {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    var group: String
    static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
    var description: String { "#\(id)(\(title), rank \(rank), \(done ? "done" : "open"), \(group))" }
}

/// Replays a change on a mirror of the old rows and checks it gives the new rows exactly.
func replay(_ change: CollectionChange, old: [Task], new: [Task]) throws -> [Task] {
    var mirror = ListMirror(sections: [old])
    let update = change.storageUpdate { new[$0] }
    try mirror.apply(update, dataSource: [new])
    return mirror.sections[0]
}

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

    @Test func refreshGivesExactChangesForRandomTransactions() throws {
        var rng = SeededGenerator(seed: 0x11fe)
        // No fsync per commit: the test is about change sets, not durability.
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Task.self])
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
        for round in 0..<600 {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
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
            let cleared = round == 450
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
        let witness = store.objects(Task.self).observe(on: queue) { change in
            if case .update = change { witnessed.signal() }
        }
        try store.write { tx in try tx.insert(Task(id: 2, title: "two", rank: 2, done: false, group: "x")) }
        #expect(witnessed.wait(timeout: .now() + 5) == .success)
        queue.sync {}
        #expect(delivered.wait(timeout: .now()) == .timedOut, "a cancelled token stops deliveries")
        #expect(received.withLock { $0 }.count == 2)
        witness.cancel()
    }

    @Test func changesAsAnAsyncSequence() async throws {
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

func changesText(_ update: StorageUpdate) -> [String] {
    update.objectChanges.map { "\($0.0.rawValue) \($0.1.map(\.item))" }
}

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

@Suite struct LiveGroupTests {
    @Test func aGroupAdvancesAllMembersToOneVersion() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self, Counter.self])
        try store.write { tx in
            for i in 0..<4 {
                try tx.insert(Task(id: i, title: "t\(i)", rank: i, done: i % 2 == 0, group: "x"))
            }
        }
        let open = try store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
            .live()
        let done = try store.objects(Task.self).filter(#Predicate { $0.done == true }).sorted(by: \.rank)
            .live()
        let counters = try store.objects(Counter.self).live()
        let group = LiveGroup(store: store)
        #expect(group.add(open) == 0)
        #expect(group.add(done) == 1)
        #expect(group.add(counters) == 2)
        // One commit moves a task from one query to the other and adds a counter of another type.
        try store.write { tx in
            try tx.update(Task.self, key: 1) { $0.done = true }
            try tx.insert(Counter(name: "c", value: 1))
        }
        let changes = try group.refresh()
        #expect(changes.count == 3)
        #expect(open.version == done.version && done.version == counters.version)
        for change in changes {
            switch change {
            case .results(0, let change): #expect(change.deletions == [0])
            case .results(1, let change): #expect(change.insertions == [1])
            case .results(2, let change): #expect(change.insertions == [0])
            default: Issue.record("unexpected \(change)")
            }
        }
        #expect(try group.refresh().isEmpty)
    }

    @Test func aWriteWithoutNotifyingIsNotDelivered() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "quiet")
        let updates = Locked<[String]>([])
        let signal = DispatchSemaphore(value: 0)
        let token = store.objects(Task.self).sorted(by: \.rank).observe(on: queue) { change in
            if case .update(_, let change) = change { updates.withLock { $0.append("\(change.insertions)") } }
            signal.signal()
        }
        #expect(signal.wait(timeout: .now() + 5) == .success)  // initial
        try store.write(withoutNotifying: [token]) { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
        }
        #expect(signal.wait(timeout: .now() + 0.3) == .timedOut)
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x")) }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        #expect(updates.withLock { $0 } == ["[1]"])  // only the second insert, at its new index
        token.cancel()
    }

    /// Issue 23, finding 6: the token learned which observation to silence only once the observation
    /// had started on its queue, so a silent write right after `observe` returned was delivered.
    @Test func aWriteWithoutNotifyingRightAfterObserveIsNotDelivered() throws {
        let tmp = TemporaryDirectory()
        let store = try Store(at: tmp.url, types: [Task.self])
        let queue = DispatchQueue(label: "quiet")
        let updates = Locked<[String]>([])
        let signal = DispatchSemaphore(value: 0)
        let handedOut = Locked<ObservationToken?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        // The silent write commits after the observation's results were read, before it started.
        LiveContext.of(store).hooks.onSourceMade {
            ready.wait()
            guard let token = handedOut.withLock({ $0 }) else { return }
            do {
                try store.write(withoutNotifying: [token]) { tx in
                    try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        let token = store.objects(Task.self).sorted(by: \.rank).observe(on: queue) { change in
            if case .update(_, let change) = change { updates.withLock { $0.append("\(change.insertions)") } }
            signal.signal()
        }
        handedOut.withLock { $0 = token }
        ready.signal()
        #expect(signal.wait(timeout: .now() + 5) == .success)  // initial
        LiveContext.of(store).hooks.onSourceMade(nil)
        #expect(signal.wait(timeout: .now() + 0.3) == .timedOut)
        try store.write { tx in try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x")) }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        #expect(updates.withLock { $0 } == ["[1]"])
        #expect(failure.withLock { $0 } == nil)
        token.cancel()
    }
}

@Suite struct ChangeLogEncodingTests {
    @Test func theDirectEncodingIsTheCodableEncoding() throws {
        var pending = PendingChanges()
        pending.record(type: "A", key: [1, 2], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [3], existedBefore: true, existsAfter: true, fields: ["x", "b"])
        pending.record(type: "B", key: [4], existedBefore: true, existsAfter: false)
        pending.record(type: "A", key: [5], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [5], existedBefore: true, existsAfter: false)  // nets to nothing
        for threshold in [Int.max, 1] {
            let direct = try #require(pending.encodedEntry(bulkThreshold: threshold))
            let decoded = try CBORDecoder().decode(ChangeLogEntry.self, from: direct)
            let expected = pending.entry(bulkThreshold: threshold)
            #expect(decoded.changes == expected.changes)
            var reencoded = expected
            reencoded.time = decoded.time
            #expect(try CBOREncoder().encode(reencoded) == direct)
            // Pruning reads the time from the first bytes alone.
            let time = direct.withUnsafeBytes { ChangeLogEntry.time(ofEncoded: $0) }
            #expect(time == decoded.time)
            if threshold == 1 {
                // Two changes of A (more than 1): one bulk change where A's first change was.
                #expect(decoded.changes.map { $0.op } == [.bulk, .delete])
                #expect(decoded.changes[0].count == 2)
            } else {
                #expect(decoded.changes.map { $0.op } == [.insert, .update, .delete])
                #expect(decoded.changes[1].fields == ["b", "x"])
            }
        }
    }
}

@Suite struct RankedKeysTests {
    /// Random inserts and removals agree with a sorted array, ranks and keys at ranks included, and
    /// the structure's invariants hold everywhere after each step (debug builds also check them near
    /// every mutation).
    @Test(arguments: [(512, 64), (4, 3), (2, 2)])
    func randomEditsAgreeWithASortedArray(chunkCapacity: Int, groupCapacity: Int) {
        var rng = SeededGenerator(seed: 0x5eed)
        var keys = RankedKeys(chunkCapacity: chunkCapacity, groupCapacity: groupCapacity)
        var model: [[UInt8]] = []
        var kept = (keys: keys, model: model)
        for step in 0..<20_000 {
            let key = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                UInt8.random(in: 0...40, using: &rng)
            }
            let position = model.firstIndex { !$0.lexicographicallyPrecedes(key) } ?? model.count
            if position < model.count && model[position] == key {
                #expect(keys.remove(key) == position)
                model.remove(at: position)
            } else if step % 3 != 0 || model.isEmpty {
                #expect(keys.insert(key) == position)
                model.insert(key, at: position)
            }
            if step % 997 == 0 {
                // A copy taken earlier still holds what it held (the structure is shared copy-on-write).
                #expect(kept.keys.allKeys == kept.model)
                kept = (keys, model)
                #expect(keys.allKeys == model)
                #expect(
                    (0..<model.count).allSatisfy {
                        keys.key(at: $0) == model[$0] && keys.rank(of: model[$0]) == $0
                    })
            }
        }
        #expect(keys.count == model.count && keys.allKeys == model)
    }
}

@Suite struct EntryTableTests {
    /// Random sets, replacements and removals agree with a dictionary, through growth, removed
    /// slots and arena compactions.
    @Test func randomEditsAgreeWithADictionary() {
        var rng = SeededGenerator(seed: 0xe7)
        var table = EntryTable()
        var model: [[UInt8]: [UInt8]] = [:]
        func bytes(_ count: ClosedRange<Int>) -> [UInt8] {
            (0..<Int.random(in: count, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        let keys = (0..<600).map { _ in bytes(1...12) }
        for step in 0..<30_000 {
            let key = keys[Int.random(in: 0..<keys.count, using: &rng)]
            if Int.random(in: 0..<3, using: &rng) == 0 {
                table.remove(key)
                model[key] = nil
            } else {
                let entry = LiveRow.make(section: bytes(0...3), sort: bytes(0...30), key: key)
                table.set(entry)
                model[key] = entry
            }
            if step % 1_000 == 0 {
                #expect(table.count == model.count)
                #expect(keys.allSatisfy { table[$0].map { Array($0) } == model[$0] })
                #expect(Set(table.entries) == Set(model.values))
            }
        }
    }
}
