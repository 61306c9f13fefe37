import Foundation
import Lode
import ModelStorage
import StoredQuery
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeStudio
@testable import LodeTestModels
@testable import LodeTestSupport

/// A type with every value kind JSON cannot hold exactly.
struct Shipment: Persistable, Equatable {
    struct Address: Codable, Equatable {
        var city: String
        var zip: String?
    }
    var id: UUID
    var carrier: String
    var sent: Date
    var price: Decimal
    var label: Data
    var note: String?
    var weights: [Double]
    var address: Address
    var tracking: String
    static let schema = Schema<Shipment>(
        primaryKey: \.id,
        indexes: [.on(\.sent), .on(\.carrier, \.price), .unique(\.tracking), .on(\.note)])
}

/// A key of every kind an index can hold: integers of several widths and signs, floating point,
/// booleans, dates, UUIDs, data, optionals, enums with raw values, long text, compounds.
struct KeyZoo: Persistable, Equatable {
    var id: Int64
    var small: Int8
    var big: UInt64
    var ratio: Double
    var flag: Bool
    var when: Date
    var token: UUID
    var blob: Data
    var maybe: Int?
    var status: Status
    var text: String
    static let schema = Schema<KeyZoo>(
        primaryKey: \.id,
        indexes: [
            .on(\.small), .on(\.big), .on(\.ratio), .on(\.flag), .on(\.when), .on(\.token), .on(\.blob),
            .on(\.maybe), .on(\.status), .on(\.text), .on(\.flag, \.when), .on(\.status, \.small, \.text),
        ])
}

@Suite struct ExportTests {
    let tmp = TemporaryDirectory()

    func shipments(_ count: Int) -> [Shipment] {
        var rng = SeededGenerator(seed: 7)
        var result: [Shipment] = []
        for n in 0..<count {
            let carrier = ["DHL", "UPS", "Poste"][Int.random(in: 0..<3, using: &rng)]
            let sent = Date(timeIntervalSince1970: 1_700_000_000.123_456 + Double(n) * 3_600.5)
            let price = Decimal(string: "\(Int.random(in: 1..<100_000, using: &rng)).\(n % 100)")!
            let length = Int.random(in: 0..<40, using: &rng)
            let label = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 * n) })
            let note: String? = n % 4 == 0 ? nil : "note \(n) \u{e9}\u{301}"
            let weights: [Double] = [Double(n) / 3, -0.0, .greatestFiniteMagnitude]
            let address = Shipment.Address(city: "City \(n % 5)", zip: n % 2 == 0 ? "0\(n)" : nil)
            let tracking = String(repeating: "T", count: n % 7 == 0 ? 600 : 3) + "\(n)"
            result.append(
                Shipment(
                    id: UUID(), carrier: carrier, sent: sent, price: price, label: label, note: note,
                    weights: weights, address: address, tracking: tracking))
        }
        return result
    }

    var binary: String { builtTool("lode-dump") }

    /// Index keys come from two derivations — the app's types when it writes, the untyped records when
    /// `load` restores — so they must agree to the byte, for every kind of key: an export loaded back
    /// reproduces every database of the store exactly.
    @Test func anExportLoadsBackEveryIndexByteForByteForEveryKeyKind() throws {
        let source = tmp.url.appendingPathComponent("zoo")
        var rng = SeededGenerator(seed: 0x200)
        let store = try Store(at: source, types: [KeyZoo.self, Shipment.self])
        try store.write { tx in
            for id in 0..<400 {
                try tx.insert(
                    KeyZoo(
                        id: Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &rng),
                        small: Int8.random(in: .min ... .max, using: &rng),
                        big: UInt64.random(in: 0 ... .max, using: &rng),
                        ratio: [-1e300, -2.5, -0.0, 0, 1e-300, 3.25, .infinity, -.infinity][id % 8]
                            * Double(id % 3 + 1),
                        flag: Bool.random(using: &rng),
                        when: Date(
                            timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &rng)),
                        token: UUID(), blob: Data((0..<(id % 9)).map { UInt8(truncatingIfNeeded: $0 * id) }),
                        maybe: id % 3 == 0 ? nil : Int.random(in: -50...50, using: &rng),
                        status: Status.allCases[id % 3],
                        text: id % 11 == 0
                            ? String(repeating: "long \u{e9}", count: 120) : "t\(id % 17)\u{0}\(id)"))
            }
            try tx.insert(contentsOf: shipments(50))
        }
        store.close()
        let exportFile = tmp.url.appendingPathComponent("zoo.ndjson").path
        #expect(try shell("'\(binary)' export '\(source.path)' > '\(exportFile)'").status == 0)
        let target = tmp.url.appendingPathComponent("zoo-loaded").path
        let loaded = try shell("'\(binary)' load '\(target)' < '\(exportFile)'")
        #expect(loaded.status == 0, "\(loaded.err)")
        let databases = try Store(at: source).inspect { try $0.databaseNames() }
            .filter { $0.hasPrefix("KeyZoo") || $0.hasPrefix("Shipment") }
        #expect(databases.count == 2 + 12 + 4)
        for database in databases {
            let original = try shell("'\(binary)' raw '\(source.path)' -s '\(database)'")
            let restored = try shell("'\(binary)' raw '\(target)' -s '\(database)'")
            #expect(original.status == 0 && restored.status == 0)
            let lines = { (dump: String) in dump.split(separator: "\n").filter { !$0.hasPrefix("mapsize=") } }
            #expect(lines(original.out) == lines(restored.out), "\(database) differs after export and load")
        }
    }

    @Test func anExportLoadsBackIntoAStoreTheLibraryReadsUnchanged() throws {
        let source = tmp.url.appendingPathComponent("source")
        let originals = shipments(300)
        let store = try Store(at: source, types: [Shipment.self, Counter.self])
        try store.write { tx in
            try tx.insert(contentsOf: originals)
            try tx.insert(Counter(name: "loads", value: 3))
        }
        store.close()
        let before = try Data(contentsOf: source.appendingPathComponent("data.mdb"))
        let exportFile = tmp.url.appendingPathComponent("export.ndjson").path
        let exported = try shell("'\(binary)' export '\(source.path)' > '\(exportFile)'")
        #expect(exported.status == 0, "\(exported.err)")
        #expect(
            try Data(contentsOf: source.appendingPathComponent("data.mdb")) == before, "export reads only")
        let lines = try String(contentsOfFile: exportFile, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1 + 2 + 301 + 1, "header, two type lines, a line per object, the end line")
        #expect(lines[0].hasPrefix(#"{"lode":"export","exportVersion":1,"format":2,"#))
        #expect(lines.last == #"{"end":{"types":2,"records":301}}"#)

        let target = tmp.url.appendingPathComponent("target").path
        let loaded = try shell("'\(binary)' load '\(target)' < '\(exportFile)'")
        #expect(loaded.status == 0, "\(loaded.err)")
        #expect(loaded.out == "loaded 2 types, 301 objects into \(target)\n")
        #expect(try shell("'\(binary)' check '\(target)'").status == 0, "indexes rebuilt exactly")

        // The app's types read every value back exactly, through every index.
        let restored = try Store(atPath: target, types: [Shipment.self, Counter.self])
        let byID = Dictionary(uniqueKeysWithValues: originals.map { ($0.id, $0) })
        let all = try restored.objects(Shipment.self).fetch()
        #expect(all.count == 300)
        for shipment in all { #expect(byID[shipment.id] == shipment) }
        let cutoff = originals[100].sent
        #expect(
            try restored.objects(Shipment.self).filter(#Predicate { $0.sent < cutoff }).sorted(by: \.sent)
                .fetch()
                == Array(originals[0..<100]))
        let long = originals[7].tracking
        #expect(
            try restored.objects(Shipment.self).filter(#Predicate { $0.tracking == long }).fetch()
                == [originals[7]], "a 600-byte unique value uses the long-key form")
        #expect(
            try restored.objects(Shipment.self).filter(#Predicate { $0.note == nil }).fetch().count == 75)
        #expect(try restored.read { tx in try tx.object(Counter.self, key: "loads") }?.value == 3)
        try restored.write { tx in
            // The restored indexes keep working for writes.
            var copy = originals[1]
            copy.id = UUID()
            #expect(throws: LodeError.self) { try tx.insert(copy) }
        }
        restored.close()

        // Exporting the restored store gives the same lines (the header names another version).
        let again = try shell("'\(binary)' export '\(target)'")
        #expect(again.out.split(separator: "\n").dropFirst() == lines.dropFirst())
        // One type only.
        let one = try shell("'\(binary)' export '\(target)' Counter")
        #expect(one.out.split(separator: "\n").count == 4)
        #expect(
            try shell("'\(binary)' export '\(target)' Nope").err
                == "lode-dump: no type named \"Nope\" in the store\n")
    }

    @Test func aBrokenExportLoadsNothingAndSaysWhere() throws {
        let source = tmp.url.appendingPathComponent("source")
        let store = try Store(at: source, types: [Shipment.self])
        try store.write { tx in try tx.insert(contentsOf: shipments(20)) }
        store.close()
        let export = try shell("'\(binary)' export '\(source.path)'").out
        var lines = export.split(separator: "\n").map(String.init)

        func load(_ text: String, force: Bool = false) throws -> (status: Int32, err: String, target: String)
        {
            let file = tmp.url.appendingPathComponent("input-\(UUID())").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            let target = tmp.url.appendingPathComponent("target-\(UUID())").path
            let result = try shell("'\(binary)' load '\(target)'\(force ? " --force" : "") < '\(file)'")
            return (result.status, result.err, target)
        }
        func expectNothingLoaded(_ text: String, _ message: String) throws {
            let result = try load(text)
            #expect(result.status == 1)
            #expect(result.err.hasPrefix("lode-dump: ") && result.err.contains(message), "\(result.err)")
            #expect(!FileManager.default.fileExists(atPath: result.target), "a failed load leaves nothing")
        }
        try expectNothingLoaded(
            lines.dropLast().joined(separator: "\n"), "the export is truncated: it has no end line")
        try expectNothingLoaded(
            lines.dropLast(3).joined(separator: "\n"), "Shipment has 18 of 20 records")
        var corrupt = lines
        corrupt[5] = #"{"record":"oWF4AQ==","object":{}}"#
        try expectNothingLoaded(
            corrupt.joined(separator: "\n"),
            #"Shipment record 4: the stored record does not decode at field "id": the primary-key field is missing"#
        )
        var duplicate = lines
        duplicate[5] = duplicate[4]
        try expectNothingLoaded(duplicate.joined(separator: "\n"), "Shipment: an object with primary key")
        var notJSON = lines
        notJSON[3] = "{\"record\":"
        try expectNothingLoaded(notJSON.joined(separator: "\n"), "export line 4: not a JSON object")
        let plain = try shell("'\(binary)' dump '\(source.path)' Shipment --format ndjson").out
        try expectNothingLoaded(plain, "export line 1: not a Lode export")
        lines[0] = lines[0].replacingOccurrences(of: #""exportVersion":1"#, with: #""exportVersion":9"#)
        try expectNothingLoaded(lines.joined(separator: "\n"), "export version 9; this tool reads 1")

        // A store that holds data is refused, and replaced only when told.
        let intoSource = try shell("'\(binary)' load '\(source.path)' < /dev/null")
        #expect(intoSource.status == 1)
        let other = tmp.url.appendingPathComponent("other")
        let otherStore = try Store(at: other, types: [Counter.self, Shipment.self])
        try otherStore.write { tx in
            try tx.insert(Counter(name: "kept", value: 1))
            try tx.insert(
                contentsOf: shipments(3).map {
                    var s = $0
                    s.tracking += "x"
                    return s
                })
        }
        otherStore.close()
        let file = tmp.url.appendingPathComponent("good.ndjson").path
        try Data(export.utf8).write(to: URL(fileURLWithPath: file))
        let refused = try shell("'\(binary)' load '\(other.path)' < '\(file)'")
        #expect(refused.status == 1 && refused.err.contains("already holds data"))
        let forced = try shell("'\(binary)' load '\(other.path)' --force < '\(file)'")
        #expect(forced.status == 0, "\(forced.err)")
        let reopened = try Store(at: other, types: [Counter.self, Shipment.self])
        #expect(try reopened.read { tx in try tx.count(Shipment.self) } == 20, "the type was replaced")
        #expect(
            try reopened.read { tx in try tx.object(Counter.self, key: "kept") }?.value == 1, "others stay")
        reopened.close()
        #expect(try shell("'\(binary)' check '\(other.path)'").status == 0)
    }
}
