import Foundation
import Lode
import LodeCodec
import LodeMacros
import Testing

@testable import LodeTestSupport

/// The generated record codec beside `Codable`'s: the same bytes for the same values, each reading
/// what the other wrote, and records of other versions and writers read by name.
@Suite struct ModelCodecTests {
    @Test func randomValuesGiveTheCodableBytesAndReadBackThroughEitherCodec() throws {
        var random = SeededGenerator(seed: 43)
        for round in 0..<400 {
            let object = Everything.random(&random)
            let generated = try object.encodeRecord()
            let codable = try CBOREncoder().encode(object)
            #expect(generated.bytes == codable, "round \(round): \(object)")
            let byGenerated = try codable.withUnsafeBytes { try Everything.decodeRecord($0) }
            let byCodable = try CBORDecoder().decode(Everything.self, from: generated.bytes)
            #expect(byGenerated == object, "round \(round)")
            #expect(byCodable == object, "round \(round)")
            // The generated decode into memory of its own (what the store's walks use) reads the same.
            let place = UnsafeMutablePointer<Everything>.allocate(capacity: 1)
            defer { place.deallocate() }
            try codable.withUnsafeBytes {
                try Everything.decodeRecord(
                    $0, names: Everything.recordFields, into: UnsafeMutableRawPointer(place))
            }
            #expect(place.move() == object, "round \(round)")
        }
    }

    @Test func theShapeIsTheSameForTheSameFieldsAndKinds() throws {
        var random = SeededGenerator(seed: 7)
        var first = Everything.random(&random)
        first.note = "a"
        var second = first
        (second.title, second.count, second.note, second.tags) = ("other", -5, "b", ["x", "y", "z"])
        #expect(try first.encodeRecord().shape == second.encodeRecord().shape)
        second.note = nil
        #expect(try first.encodeRecord().shape != second.encodeRecord().shape)
    }

    /// `record` as a map, changed by `change`, encoded again.
    func edited(_ object: Everything, _ change: (inout [CBORValue.MapEntry]) -> Void) throws -> [UInt8] {
        guard case .map(var entries) = try CBORValue(decoding: CBOREncoder().encode(object)) else {
            Issue.record("not a map")
            return []
        }
        change(&entries)
        return CBORValue.map(entries).encoded
    }

    /// The record's object, read both as a value and into memory of its own (as the store's walks
    /// read it): both must give the same object or both throw.
    func decode(_ bytes: [UInt8]) throws -> Everything {
        let place = UnsafeMutablePointer<Everything>.allocate(capacity: 1)
        defer { place.deallocate() }
        let inPlace = Result {
            try bytes.withUnsafeBytes {
                try Everything.decodeRecord(
                    $0, names: Everything.recordFields, into: UnsafeMutableRawPointer(place))
            }
            return place.move()
        }
        let value = Result { try bytes.withUnsafeBytes { try Everything.decodeRecord($0) } }
        switch (inPlace, value) {
        case (.success(let a), .success(let b)): #expect(a == b)
        case (.failure, .failure): break
        default: Issue.record("the decode in place and the value decode disagree: \(inPlace), \(value)")
        }
        return try value.get()
    }

    @Test func fieldsAreFoundByNameInAnyOrderAndUnknownOnesAreSkipped() throws {
        var random = SeededGenerator(seed: 11)
        for _ in 0..<50 {
            let object = Everything.random(&random)
            let shuffled = try edited(object) { entries in
                entries.shuffle(using: &random)
                entries.insert(
                    .init(key: .text("addedByANewerVersion"), value: .array([.unsigned(1)])), at: 3)
                entries.append(.init(key: .text("zz"), value: .map([])))
            }
            #expect(try decode(shuffled) == object)
            // CBORDecoder agrees.
            #expect(try CBORDecoder().decode(Everything.self, from: shuffled) == object)
        }
    }

    @Test func missingFieldsTakeTheirDefaultsOrNilAndARequiredOneIsNamed() throws {
        var random = SeededGenerator(seed: 5)
        var object = Everything.random(&random)
        object.note = "present"
        let withoutOptional = try edited(object) { $0.removeAll { $0.key == .text("note") } }
        #expect(try decode(withoutOptional).note == nil)
        let withoutDefaulted = try edited(object) { $0.removeAll { $0.key == .text("priority") } }
        #expect(try decode(withoutDefaulted).priority == 0)
        let withoutRequired = try edited(object) { $0.removeAll { $0.key == .text("title") } }
        #expect {
            try decode(withoutRequired)
        } throws: { error in
            let error = error as? RecordDecodingError
            return error?.field == "title" && error?.reason == #"the record has no field "title""#
        }
    }

    @Test func aValueOfTheWrongTypeOrAFieldTwiceIsNamed() throws {
        var random = SeededGenerator(seed: 9)
        let object = Everything.random(&random)
        func set(_ name: String, _ value: CBORValue) -> (inout [CBORValue.MapEntry]) -> Void {
            { entries in
                let position = entries.firstIndex { $0.key == .text(name) }!
                entries[position] = .init(key: .text(name), value: value)
            }
        }
        let cases: [(change: (inout [CBORValue.MapEntry]) -> Void, field: String, reason: String)] = [
            (set("title", .unsigned(5)), "title", "expected String, found an integer"),
            (set("count", .text("many")), "count", "expected Int, found text"),
            (set("small", .unsigned(300)), "small", "the number does not fit in Int8"),
            (set("stage", .text("archived")), "stage", "archived (at byte"),
            (
                set("tags", .array([.text("a"), .unsigned(2)])), "tags[1]",
                "expected String, found an integer"
            ),
            ({ $0.append($0[0]) }, "id", #"the map holds the field "id" twice"#),
            // Again right after itself, where the declared-order reads ask for the next field.
            ({ $0.insert($0[0], at: 1) }, "id", #"the map holds the field "id" twice"#),
            ({ $0.insert($0[2], at: 3) }, "stage", #"the map holds the field "stage" twice"#),
        ]
        for (change, field, reason) in cases {
            let bytes = try edited(object, change)
            #expect {
                try decode(bytes)
            } throws: { error in
                guard let error = error as? RecordDecodingError else { return false }
                #expect(error.field == field && error.reason.contains(reason), "\(error)")
                return true
            }
            // Codable's decoder refuses the same record.
            #expect(throws: (any Error).self) { try CBORDecoder().decode(Everything.self, from: bytes) }
        }
    }

    @Test func malformedBytesThrowAndNeverTrap() throws {
        var random = SeededGenerator(seed: 13)
        let record = try Everything.random(&random).encodeRecord().bytes
        for cut in 0..<record.count {
            #expect(throws: (any Error).self) { try decode(Array(record[..<cut])) }
        }
        #expect(throws: (any Error).self) { try decode(record + [0]) }
        for _ in 0..<2000 {
            var damaged = record
            for _ in 0..<3 {
                damaged[Int.random(in: 0..<damaged.count, using: &random)] = .random(
                    in: 0...255, using: &random)
            }
            _ = try? decode(damaged)
        }
    }

    @Test func aRecordOfMoreThanTwentyThreeFieldsHasALongerHead() throws {
        var wide = Wide(id: 7)
        wide.f29 = 1_000_000
        let generated = try wide.encodeRecord().bytes
        #expect(generated == (try CBOREncoder().encode(wide)))
        #expect(generated.prefix(2) == [0xb8, 31])
        #expect(try generated.withUnsafeBytes { try Wide.decodeRecord($0) } == wide)
    }

    /// Python's cbor2, knowing nothing of Lode, reads what the generated codec writes.
    @Test func anIndependentDecoderReadsGeneratedRecords() throws {
        var random = SeededGenerator(seed: 17)
        let objects = (0..<50).map { _ in Everything.random(&random) }
        let directory = TemporaryDirectory("cbor2")
        let file = directory.url.appendingPathComponent("records.hex")
        let lines = try objects.map {
            try $0.encodeRecord().bytes.map { String(format: "%02x", $0) }.joined()
        }
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let script = """
            import cbor2, json, sys
            out = []
            for line in open(sys.argv[1]).read().split():
                r = cbor2.loads(bytes.fromhex(line))
                out.append([r['title'], r['count'], r['tags'], r.get('note'), r['stage'], str(r['id']), sorted(r.keys())])
            print(json.dumps(out))
            """
        let result = try shell(
            "python3 -c '\(script.replacingOccurrences(of: "'", with: "'\"'\"'"))' '\(file.path)'")
        let decoded = try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[Any]]
        #expect(decoded?.count == objects.count, "\(result.err)")
        for (object, row) in zip(objects, decoded ?? []) {
            #expect(row[0] as? String == object.title)
            #expect(row[1] as? Int == object.count)
            #expect(row[2] as? [String] == object.tags)
            #expect(row[3] as? String == object.note)
            #expect(row[4] as? String == object.stage.rawValue)
            #expect((row[5] as? String)?.uppercased() == object.id.uuidString)
            let names = try CBORValue(decoding: CBOREncoder().encode(object)).mapKeys
            #expect(row[6] as? [String] == names.sorted())
        }
    }
}

extension CBORValue {
    /// A map's text keys, in order.
    var mapKeys: [String] {
        guard case .map(let entries) = self else { return [] }
        return entries.compactMap { if case .text(let key) = $0.key { key } else { nil } }
    }
}

extension Everything {
    static func random(_ random: inout SeededGenerator) -> Everything {
        func text(_ random: inout SeededGenerator) -> String {
            let alphabets = ["abc xyz", "äöü é", "日本語", "🙂👍", "\u{0}\t\n"]
            let alphabet = Array(alphabets.randomElement(using: &random)!)
            return String(
                (0..<Int.random(in: 0..<30, using: &random)).map { _ in
                    alphabet.randomElement(using: &random)!
                })
        }
        let seconds = Double(Int.random(in: -2_000_000_000...4_000_000_000, using: &random))
        let when =
            Bool.random(using: &random)
            ? Date(timeIntervalSince1970: seconds) : Date(timeIntervalSinceReferenceDate: seconds / 7 + 0.1)
        return Everything(
            id: UUID(), title: text(&random), stage: Stage.allCases.randomElement(using: &random)!,
            count: Int.random(in: Int.min...Int.max, using: &random),
            small: Int8.random(in: Int8.min...Int8.max, using: &random),
            unsigned: UInt64.random(in: 0...UInt64.max, using: &random),
            ratio: Double.random(in: -1e300...1e300, using: &random),
            single: Float.random(in: -1e30...1e30, using: &random), flag: Bool.random(using: &random),
            when: when,
            blob: Data(
                (0..<Int.random(in: 0..<40, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }),
            link: URL(string: "https://example.com/\(Int.random(in: 0..<1000, using: &random))")!,
            note: Bool.random(using: &random) ? text(&random) : nil,
            tags: (0..<Int.random(in: 0..<5, using: &random)).map { _ in text(&random) },
            scores: Set(
                (0..<Int.random(in: 0..<5, using: &random)).map { _ in
                    Int.random(in: -100...100, using: &random)
                }),
            byName: Dictionary(
                uniqueKeysWithValues: (0..<Int.random(in: 0..<4, using: &random)).map {
                    ("k\($0)", Double($0) / 3)
                }),
            byNumber: Dictionary(
                uniqueKeysWithValues: (0..<Int.random(in: 0..<4, using: &random)).map { ($0 * 7, "v\($0)") }),
            address: Address(city: text(&random), zip: Bool.random(using: &random) ? 1234 : nil),
            previous: Bool.random(using: &random) ? Address(city: "old", zip: 1) : nil,
            maybeStage: Bool.random(using: &random) ? .done : nil,
            priority: Int.random(in: 0..<10, using: &random),
            project: Bool.random(using: &random)
                ? try? Link(key: Int.random(in: 0..<100, using: &random)) : nil,
            related: (0..<Int.random(in: 0..<3, using: &random)).map { try! Link(key: $0) })
    }
}
