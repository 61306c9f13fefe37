import Foundation
import LMDB
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// A model whose conditions the generated reader checks on the record's fields: one indexed
/// property (so a query can take candidates from the index and check the rest), the others not.
@Model
struct Sample: Equatable {
    @PrimaryKey var id: Int
    @Indexed var rank: Int
    var a: Int = 7
    var b: String
    var c: Double
    var stage: Stage
    var when: Date
    var flag: Bool
    var opt: Int?
}

/// Queries over a generated model's records whose conditions are checked on the fields before the
/// objects are decoded: the results are exactly a brute-force filter's, whatever order the fields
/// come in, whichever fields a record lacks.
@Suite struct ModelFilterTests {
    let directory = TemporaryDirectory("model-filter")

    struct Case {
        let name: String
        let predicate: Predicate<Sample>
        let matches: (Sample) -> Bool
    }

    func randomSample(id: Int, using rng: inout some RandomNumberGenerator) -> Sample {
        // "é" twice: composed and decomposed, equal as Swift strings.
        let words = ["", "a", "ab", "abc", "b", "ba", "é", "e\u{301}", "éa", "日本", "Z", "z"]
        return Sample(
            id: id, rank: Int.random(in: 0..<8, using: &rng), a: Int.random(in: -20...20, using: &rng),
            b: words.randomElement(using: &rng)!,
            c: [Double.random(in: -100...100, using: &rng), 0, -0.5, 1.5].randomElement(using: &rng)!,
            stage: Stage.allCases.randomElement(using: &rng)!,
            when: Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...5, using: &rng)) * 86_400.5),
            flag: Bool.random(using: &rng),
            opt: Bool.random(using: &rng) ? Int.random(in: -5...5, using: &rng) : nil)
    }

    func randomCase(using rng: inout some RandomNumberGenerator) -> Case {
        let x = Int.random(in: -22...22, using: &rng)
        let r = Int.random(in: 0..<8, using: &rng)
        let s = ["", "a", "ab", "b", "é", "z", "日"].randomElement(using: &rng)!
        let stage = Stage.allCases.randomElement(using: &rng)!
        let d = Double.random(in: -100...100, using: &rng)
        let date = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...6, using: &rng)) * 86_400.5)
        let set = (0..<Int.random(in: 0...4, using: &rng)).map { _ in Int.random(in: -22...22, using: &rng) }
        let o: Int? = Bool.random(using: &rng) ? nil : Int.random(in: -5...5, using: &rng)
        let cases: [Case] = [
            Case(name: "a == \(x)", predicate: #Predicate { $0.a == x }, matches: { $0.a == x }),
            Case(name: "a < \(x)", predicate: #Predicate { $0.a < x }, matches: { $0.a < x }),
            Case(name: "a >= \(x)", predicate: #Predicate { $0.a >= x }, matches: { $0.a >= x }),
            Case(name: "\(x) > a", predicate: #Predicate { x > $0.a }, matches: { x > $0.a }),
            Case(
                name: "a in \(set)", predicate: #Predicate { set.contains($0.a) },
                matches: { set.contains($0.a) }),
            Case(name: "b == \(s)", predicate: #Predicate { $0.b == s }, matches: { $0.b == s }),
            Case(name: "b <= \(s)", predicate: #Predicate { $0.b <= s }, matches: { $0.b <= s }),
            Case(
                name: "b starts \(s)", predicate: #Predicate { $0.b.starts(with: s) },
                matches: { $0.b.starts(with: s) }),
            Case(name: "c > \(d)", predicate: #Predicate { $0.c > d }, matches: { $0.c > d }),
            Case(
                name: "stage == \(stage)", predicate: #Predicate { $0.stage == stage },
                matches: { $0.stage == stage }),
            Case(name: "when < date", predicate: #Predicate { $0.when < date }, matches: { $0.when < date }),
            Case(name: "flag", predicate: #Predicate { $0.flag }, matches: { $0.flag }),
            Case(name: "!flag", predicate: #Predicate { !$0.flag }, matches: { !$0.flag }),
            Case(
                name: "opt == \(String(describing: o))", predicate: #Predicate { $0.opt == o },
                matches: { $0.opt == o }),
            Case(
                name: "a > \(x) && b < \(s) && c <= \(d)",
                predicate: #Predicate { $0.a > x && $0.b < s && $0.c <= d },
                matches: { $0.a > x && $0.b < s && $0.c <= d }),
            Case(
                name: "a > \(x) && a < \(x + 10)", predicate: #Predicate { $0.a > x && $0.a < x + 10 },
                matches: { $0.a > x && $0.a < x + 10 }),
            // Candidates from the index on rank, the rest checked on the fields.
            Case(
                name: "rank == \(r) && a <= \(x)", predicate: #Predicate { $0.rank == r && $0.a <= x },
                matches: { $0.rank == r && $0.a <= x }),
            Case(
                name: "rank >= \(r) && b starts \(s)",
                predicate: #Predicate { $0.rank >= r && $0.b.starts(with: s) },
                matches: { $0.rank >= r && $0.b.starts(with: s) }),
            // A condition the reader cannot check beside one it can: the predicate decides the rest.
            Case(
                name: "a < \(x) || b == \(s), and c > \(d)",
                predicate: #Predicate { ($0.a < x || $0.b == s) && $0.c > d },
                matches: { ($0.a < x || $0.b == s) && $0.c > d }),
        ]
        return cases.randomElement(using: &rng)!
    }

    /// The record another writer might make of `sample`: its fields in reverse order, and without
    /// `a` when it holds the default.
    func foreignRecord(_ sample: Sample) throws -> [UInt8] {
        let bytes = try sample.encodeRecord().bytes
        guard case .map(let entries) = try CBORValue(decoding: bytes) else { return bytes }
        let kept = entries.reversed().filter { !($0.key == .text("a") && sample.a == 7) }
        return CBORValue.map(Array(kept)).encoded
    }

    /// A store of `count` random samples (every fifth with `a` at its default), the records of
    /// `rewritten` rewritten as another writer would make them (see ``foreignRecord(_:)``); the samples
    /// in key order.
    func sampleStore(_ count: Int, rewritten: StrideTo<Int>, using rng: inout some RandomNumberGenerator)
        throws -> (Store, [Sample])
    {
        let url = directory.url
        let store = try Store(at: url, types: [Sample.self])
        var samples: [Sample] = []
        try store.write { tx in
            for id in 0..<count {
                var sample = randomSample(id: id, using: &rng)
                if id % 5 == 0 { sample.a = 7 }
                samples.append(sample)
                try tx.insert(sample)
            }
        }
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Sample", create: false)
        try environment.write { txn in
            for id in rewritten {
                try txn.put(try foreignRecord(samples[id]), forKey: try KeyEncoder().encode(id), in: records)
            }
        }
        return (store, samples)
    }

    @Test func randomConditionsMatchABruteForceFilter() throws {
        var rng = SeededGenerator(seed: 0x5a_3b1e)
        // A third of the records rewritten as another writer would: reordered, the default left out.
        let (store, all) = try sampleStore(600, rewritten: stride(from: 0, to: 600, by: 3), using: &rng)
        for _ in 0..<300 {
            let query = randomCase(using: &rng)
            let found = try store.objects(Sample.self).filter(query.predicate).fetch()
            #expect(found == all.filter(query.matches), "\(query.name)")
            let inTransaction = try store.read { try $0.objects(Sample.self).filter(query.predicate).fetch() }
            #expect(inTransaction == found, "\(query.name)")
        }
    }

    @Test func sortsByPropertiesWithoutAnIndexMatchABruteForceSort() throws {
        var rng = SeededGenerator(seed: 0x50_27ed)
        let (store, all) = try sampleStore(500, rewritten: stride(from: 1, to: 500, by: 4), using: &rng)
        let sorts: [[SortDescriptor<Sample>]] = [
            [SortDescriptor(\.a)], [SortDescriptor(\.a, order: .reverse)], [SortDescriptor(\.c)],
            [SortDescriptor(\.when, order: .reverse), SortDescriptor(\.a)],
            [SortDescriptor(\.a), SortDescriptor(\.c, order: .reverse)],
            // Strings compared with `<`, as a key path's descriptor does; ties (é composed or not)
            // in key order.
            [SortDescriptor(\.a), SortDescriptor(\.b)], [SortDescriptor(\.b)],
            [SortDescriptor(\.b, order: .reverse), SortDescriptor(\.c)],
            // A string comparator is the descriptor's own: not read as a column.
            [SortDescriptor(\.b, comparator: .lexical), SortDescriptor(\.a)],
        ]
        for round in 0..<200 {
            let sort = sorts.randomElement(using: &rng)!
            let x = Int.random(in: -22...22, using: &rng)
            let filtered = round % 3 == 0
            let offset = Int.random(in: 0..<3, using: &rng) == 0 ? Int.random(in: 0...40, using: &rng) : 0
            let limit: Int? =
                Int.random(in: 0..<4, using: &rng) == 0 ? nil : Int.random(in: 0...30, using: &rng)
            var want = Array(
                (filtered ? all.filter { $0.c > Double(x) } : all).sortedStably(by: sort).dropFirst(offset))
            if let limit { want = Array(want.prefix(limit)) }
            var results = store.objects(Sample.self)
            if filtered {
                let bound = Double(x)
                results = results.filter(#Predicate { $0.c > bound })
            }
            results = results.sorted(by: sort).offset(offset)
            if let limit { results = results.limit(limit) }
            #expect(
                try results.fetch() == want,
                "round \(round): \(sort), offset \(offset), limit \(String(describing: limit))")
        }
    }

    @Test func onlyTheObjectsAQueryReturnsAreDecoded() throws {
        let url = directory.url
        let store = try Store(at: url, types: [Sample.self])
        let when = Date(timeIntervalSinceReferenceDate: 0)
        try store.write { tx in
            for id in 1...4 {
                try tx.insert(
                    Sample(
                        id: id, rank: id, a: id, b: "s\(id)", c: 0, stage: .todo, when: when, flag: false,
                        opt: nil))
            }
        }
        // Record 3's `c` no longer reads as a Double.
        let environment = try LMDB.Environment.open(at: url.path)
        let records = try environment.database(named: "Sample", create: false)
        let stored = try #require(
            try environment.read { try $0.get(try KeyEncoder().encode(3), in: records) })
        guard case .map(let entries) = try CBORValue(decoding: stored) else {
            Issue.record("a record is a map")
            return
        }
        let damaged = CBORValue.map(
            entries.map { $0.key == .text("c") ? .init(key: $0.key, value: .text("x")) : $0 })
        try environment.write { try $0.put(damaged.encoded, forKey: try KeyEncoder().encode(3), in: records) }

        // A query whose condition record 3's fields fail passes over it without decoding it, by a
        // walk of the records and through the index alike…
        #expect(try store.objects(Sample.self).filter(#Predicate { $0.a > 3 }).fetch().map(\.id) == [4])
        #expect(try store.objects(Sample.self).filter(#Predicate { $0.a < 3 }).fetch().map(\.id) == [1, 2])
        #expect(
            try store.objects(Sample.self).filter(#Predicate { $0.rank >= 2 && $0.b < "s3" }).fetch().map(
                \.id)
                == [2])
        #expect(
            try store.objects(Sample.self).filter(#Predicate { $0.rank >= 2 && $0.a > 3 }).fetch().map(\.id)
                == [4])
        // A sort cut by a limit decodes only the objects it keeps (the sort field is read alone),
        // by a string as by a number.
        #expect(
            try store.objects(Sample.self).sorted(by: \.a, ascending: false).limit(1).fetch().map(\.id) == [4]
        )
        #expect(
            try store.objects(Sample.self).sorted(by: \.b, ascending: false).limit(1).fetch().map(\.id) == [4]
        )
        // …and one that returns it names the record and the field that does not read.
        for predicate in [#Predicate<Sample> { $0.a >= 3 }, #Predicate<Sample> { $0.rank == 3 && $0.a == 3 }]
        {
            #expect {
                _ = try store.objects(Sample.self).filter(predicate).fetch()
            } throws: { error in
                guard case .recordDoesNotDecode(let type, let key, let field, _)? = error as? LodeError else {
                    return false
                }
                return type == "Sample" && key == "3" && field == "c"
            }
        }
    }
}
