import Dispatch
import Foundation
import ModelStorage
import Synchronization
import Testing

@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestSupport
@testable import LodeText

/// Live full-text searches: every change a commit delivers, replayed on the list mirror, gives
/// exactly what a fresh search gives — ranked ones re-ranked (moves included), sorted ones, filtered
/// ones, windows of them and sections of them.
@Suite struct TextSearchLiveTests {
    let tmp = TemporaryDirectory()

    struct Note: Persistable, Equatable {
        var id: Int
        var title: String
        var body: String
        var group: String
        var stars: Int
        static let schema = Schema<Note>(primaryKey: \.id, textIndexes: [.on(\.title, \.body)])
    }

    static let words = ["lode", "store", "live", "results", "café", "CAFE", "東京", "search", "rank", "moves"]

    static func text<G: RandomNumberGenerator>(_ count: Int, using rng: inout G) -> String {
        (0..<count).map { _ in words.randomElement(using: &rng)! }.joined(separator: " ")
    }

    static func note<G: RandomNumberGenerator>(_ id: Int, using rng: inout G) -> Note {
        Note(
            id: id, title: text(Int.random(in: 1...3, using: &rng), using: &rng),
            body: text(Int.random(in: 0...12, using: &rng), using: &rng),
            group: ["a", "b", "c"].randomElement(using: &rng)!, stars: Int.random(in: 0..<5, using: &rng))
    }

    func replay(_ change: CollectionChange, old: [Note], new: [Note]) throws -> [Note] {
        var mirror = ListMirror(sections: [old])
        try mirror.apply(change.storageUpdate { new[$0] }, dataSource: [new])
        return mirror.sections[0]
    }

    @Test func everyDeliveredChangeReplaysToAFreshSearch() throws {
        var rng = SeededGenerator(seed: 0x7e57)
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Note.self])
        let all = store.objects(Note.self)
        let queries: [(String, Results<Note>)] = [
            ("ranked", all.matching("store")),
            ("ranked two words", all.matching("live café")),
            ("ranked OR, first 5", all.matching("search OR rank").limit(5)),
            ("phrase", all.matching("\"live results\"")),
            ("prefix excluding", all.matching("sto* -東京")),
            ("sorted by stars", all.matching("lode").sorted(by: \.stars)),
            ("ranked and filtered", all.matching("moves").filter(#Predicate { $0.stars >= 2 })),
        ]
        var lives = try queries.map { try $0.1.live() }
        var previous = try queries.map { try $0.1.fetch() }
        let sectioned = all.matching("store OR results").sectioned(by: \.group)
        let liveSections = try sectioned.live()
        var previousSections = try sectioned.fetchSections().map { try $0.objects.fetch() }
        var ids = Set<Int>()
        var moves = 0
        for round in 0..<120 {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let id = Int.random(in: 0..<60, using: &rng)
                    switch Int.random(in: 0..<5, using: &rng) {
                    case 0:
                        if ids.remove(id) != nil { try tx.delete(Note.self, key: id) }
                    case 1, 2:
                        if ids.contains(id) {
                            let words = Int.random(in: 0...10, using: &rng)
                            let stars = Int.random(in: 0..<5, using: &rng)
                            try tx.update(Note.self, key: id) {
                                $0.body = Self.text(words, using: &rng)
                                $0.stars = stars
                            }
                        }
                    default:
                        try tx.upsert(Self.note(id, using: &rng))
                        ids.insert(id)
                    }
                }
            }
            for (index, live) in lives.enumerated() {
                let change = try live.refresh()
                let fresh = try queries[index].1.reevaluated().fetch()
                #expect(try live.results.fetch() == fresh, "round \(round) \(queries[index].0)")
                if let change {
                    moves += change.moves.count
                    #expect(
                        try replay(change, old: previous[index], new: fresh) == fresh,
                        "round \(round) \(queries[index].0): \(change)")
                } else {
                    #expect(
                        previous[index] == fresh, "round \(round) \(queries[index].0): no change delivered")
                }
                previous[index] = fresh
            }
            if let change = try liveSections.refresh() {
                let fresh = try sectioned.reevaluated().fetchSections().map { try $0.objects.fetch() }
                var mirror = ListMirror(sections: previousSections)
                try mirror.apply(change.storageUpdate { fresh[$0.section][$0.item] }, dataSource: fresh)
                #expect(mirror.sections == fresh, "round \(round) sections: \(change)")
                previousSections = fresh
            }
            if round == 60 { lives = try queries.map { try $0.1.live() } }
        }
        // Re-ranking moved rows.
        #expect(moves > 0)
    }

    @Test func anObservedRankedSearchEndsOnTheLastCommit() throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Note.self])
        var rng = SeededGenerator(seed: 0x0b5e)
        try store.write { tx in for id in 0..<40 { try tx.insert(Self.note(id, using: &rng)) } }
        let search = store.objects(Note.self).matching("store OR live")
        let delivered = Mutex<(results: Results<Note>?, errors: Int)>((nil, 0))
        let token = search.observe(on: DispatchQueue(label: "observer")) { change in
            switch change {
            case .initial(let results), .update(let results, _): delivered.withLock { $0.results = results }
            case .error: delivered.withLock { $0.errors += 1 }
            }
        }
        defer { token.cancel() }
        // Writers on two threads while the observer follows.
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            var rng = SeededGenerator(seed: UInt64(writer + 1))
            for _ in 0..<25 {
                do {
                    try store.write { tx in
                        try tx.upsert(Self.note(Int.random(in: 0..<60, using: &rng), using: &rng))
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let last = try store.read { $0.version }
        #expect(eventually { (try? delivered.withLock { $0.results }?.version()) == last })
        let final = try #require(delivered.withLock { $0.results })
        #expect(try final.fetch() == search.reevaluated().fetch())
        #expect(delivered.withLock { $0.errors } == 0)
    }
}
