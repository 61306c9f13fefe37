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

@Suite struct SectionedResultsTests {
    let tmp = TemporaryDirectory()

    func rows(_ sections: SectionedResults<String, Task>) throws -> [[Task]] {
        try sections.fetchSections().map { try $0.objects.fetch() }
    }

    @Test func sectionsAreOrderedByKeyAndRowsByTheSort() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            for (id, group) in ["y", "x", "y", "z", "x"].enumerated() {
                try tx.insert(Task(id: id, title: "t\(id)", rank: 10 - id, done: false, group: group))
            }
        }
        let sections = store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group)
        #expect(try sections.allKeys == ["x", "y", "z"])
        #expect(try rows(sections).map { $0.map(\.id) } == [[4, 1], [2, 0], [3]])
        #expect(try sections[1].key == "y")
        let byDone = store.objects(Task.self).sectioned { $0.done ? "done" : "open" }
        #expect(try byDone.allKeys == ["open"])
    }

    @Test func liveSectionsFollowRandomTransactionsExactly() throws {
        var rng = SeededGenerator(seed: 0x5ec7)
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Task.self])
        let queries = [
            store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group),
            store.objects(Task.self).filter(#Predicate { $0.rank < 20 }).sorted(by: \.title).sectioned(
                by: \.group),
            store.objects(Task.self).sorted(by: \.rank, ascending: false).sectioned {
                $0.done ? "done" : "open"
            },
        ]
        let lives = try queries.map { try $0.live() }
        var previous = try lives.map { try rows($0.sections) }
        var ids: [Int] = []
        var next = 0
        var sawSectionChanges = false
        var sawCrossSectionMove = false
        for round in 0..<500 {
            try store.write { tx in
                // Now and then more rows than move one by one: they move in batches.
                for _ in 0..<Int.random(in: round % 20 == 19 ? 9...24 : 1...5, using: &rng) {
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<4:
                        try tx.insert(
                            Task(
                                id: next, title: ["a", "b", "c"].randomElement(using: &rng)!,
                                rank: Int.random(in: 0..<30, using: &rng),
                                done: Bool.random(using: &rng),
                                group: ["w", "x", "y", "z"].randomElement(using: &rng)!))
                        ids.append(next)
                        next += 1
                    case 4..<8:
                        if let id = ids.randomElement(using: &rng) {
                            try tx.update(Task.self, key: id) { task in
                                switch Int.random(in: 0..<4, using: &rng) {
                                case 0: task.group = ["w", "x", "y", "z"].randomElement(using: &rng)!
                                case 1: task.done.toggle()
                                case 2: task.rank = Int.random(in: 0..<30, using: &rng)
                                default: task.title += "!"
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
            for (index, live) in lives.enumerated() {
                guard let change = try live.refresh() else { continue }
                let fresh = try rows(
                    queries[index].reevaluated())
                #expect(try rows(live.sections) == fresh, "round \(round) query \(index)")
                var mirror = ListMirror(sections: previous[index])
                let update = change.storageUpdate { path in fresh[path.section][path.item] }
                do {
                    try mirror.apply(update, dataSource: fresh)
                    #expect(mirror.sections == fresh, "round \(round) query \(index): \(change)")
                } catch {
                    Issue.record("round \(round) query \(index): \(error) for \(change)")
                }
                if !change.sectionInsertions.isEmpty || !change.sectionDeletions.isEmpty {
                    sawSectionChanges = true
                }
                if change.moves.contains(where: { $0.from.section != $0.to.section }) {
                    sawCrossSectionMove = true
                }
                previous[index] = fresh
            }
        }
        #expect(sawSectionChanges)
        #expect(sawCrossSectionMove)
    }

    @Test func aRowChangingSectionIsOneMove() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        try store.write { tx in
            try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x"))
            try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x"))
            try tx.insert(Task(id: 3, title: "c", rank: 3, done: true, group: "x"))
        }
        let live = try store.objects(Task.self).sorted(by: \.rank).sectioned { $0.done ? "done" : "open" }
            .live()
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.done = true } }
        let change = try #require(try live.refresh())
        #expect(
            change.moves == [
                .init(
                    from: IndexPath(item: 0, section: 1), to: IndexPath(item: 0, section: 0), modified: true)
            ])
        #expect(change.sectionInsertions.isEmpty && change.sectionDeletions.isEmpty)
        try store.write { tx in try tx.update(Task.self, key: 2) { $0.done = true } }
        let emptied = try #require(try live.refresh())
        #expect(emptied.sectionDeletions == [1])
        #expect(emptied.moves.isEmpty && emptied.deletions.isEmpty)
        #expect(emptied.insertions == [IndexPath(item: 1, section: 0)])
    }

    @Test func observingSections() throws {
        let store = try Store(at: tmp.url, types: [Task.self])
        let seen = Locked<[String]>([])
        let signal = DispatchSemaphore(value: 0)
        let token = store.objects(Task.self).sorted(by: \.rank).sectioned(by: \.group).observe(
            on: DispatchQueue(label: "s")
        ) { change in
            switch change {
            case .initial(let sections):
                let count = (try? sections.count) ?? -1
                seen.withLock { $0.append("initial \(count)") }
            case .update(let sections, let change):
                let keys = (try? sections.allKeys) ?? []
                seen.withLock { $0.append("update \(keys) \(change.sectionInsertions)") }
            case .error(let error): seen.withLock { $0.append("\(error)") }
            }
            signal.signal()
        }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        try store.write { tx in try tx.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "q")) }
        #expect(signal.wait(timeout: .now() + 5) == .success)
        #expect(seen.withLock { $0 } == ["initial 0", "update [\"q\"] [0]"])
        token.cancel()
    }
}
