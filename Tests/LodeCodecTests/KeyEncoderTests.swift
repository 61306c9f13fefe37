import Foundation
import Testing

@testable import LodeCodec
@testable import LodeTestSupport

@Suite struct KeyEncoderTests {
    /// The seed of every random value here (set `LODE_TEST_SEED` to replay a failure; failures name it).
    static let seed =
        ProcessInfo.processInfo.environment["LODE_TEST_SEED"].flatMap { UInt64($0) } ?? 0x6b65_7973

    func bytes<T: Encodable>(_ value: T) -> [UInt8] { try! KeyEncoder().encode(value) }

    func expectOrderPreserved<T: Encodable & Comparable>(
        _ values: [T], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let byValue = values.sorted()
        let byBytes = values.sorted { bytes($0).lexicographicallyPrecedes(bytes($1)) }
        #expect(byValue == byBytes, "seed \(Self.seed)", sourceLocation: sourceLocation)
        for (a, b) in zip(values, values.reversed()) {
            #expect(
                (bytes(a) == bytes(b)) == (a == b), "\(a) vs \(b) (seed \(Self.seed))",
                sourceLocation: sourceLocation)
        }
    }

    /// The integer key made on the stack (point reads by an `Int` key) is the encoder's, and the
    /// in-place comparison of walks agrees with both.
    @Test func anIntegerKeyMadeOnTheStackIsTheEncodersKey() {
        var rng = SeededGenerator(seed: Self.seed)
        var values: [Int] = [0, 1, -1, .max, .min, 255, 256, -256]
        values += (0..<200).map { _ in Int.random(in: .min ... .max, using: &rng) }
        for value in values {
            let made = KeyEncoder.withIntegerKey(Int64(value)) { Array($0) }
            #expect(made == bytes(value), "\(value) (seed \(Self.seed))")
            #expect(made.withUnsafeBufferPointer { KeyEncoder.isKey($0, ofInteger: Int64(value)) })
            #expect(!made.withUnsafeBufferPointer { KeyEncoder.isKey($0, ofInteger: Int64(value) &+ 1) })
        }
    }

    @Test func integersSortNumerically() {
        var rng = SeededGenerator(seed: Self.seed)
        var values: [Int] = [0, 1, -1, .max, .min, 255, 256, -256, 65_536]
        values += (0..<500).map { _ in Int.random(in: .min ... .max, using: &rng) }
        values += (0..<500).map { _ in Int.random(in: -1000...1000, using: &rng) }
        expectOrderPreserved(values)
        expectOrderPreserved(
            (0..<300).map { _ in UInt64.random(in: 0 ... .max, using: &rng) } + [
                0, .max, UInt64(Int64.max), UInt64(Int64.max) + 1,
            ])
        expectOrderPreserved((0..<200).map { _ in Int8.random(in: .min ... .max, using: &rng) })
    }

    @Test func doublesSortNumerically() {
        var rng = SeededGenerator(seed: Self.seed)
        var values: [Double] = [
            0, 1, -1, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            .greatestFiniteMagnitude, 0.1, -0.1,
        ]
        values += (0..<1000).map { _ in Double.random(in: -1e12...1e12, using: &rng) }
        values += (0..<300).map { _ in Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)) }.filter
        {
            !$0.isNaN
        }
        expectOrderPreserved(values)
        #expect(bytes(-0.0) == bytes(0.0))
    }

    @Test func stringsSortByUnicodeScalarsOfTheirNFCForm() {
        var rng = SeededGenerator(seed: Self.seed)
        // NFC strings only: for strings with decomposed sequences Swift's own `<` is not a strict weak
        // order ("e\u{301}a" < "éaa" and "éaa" < "e\u{301}a" are both false, yet they differ), so there
        // is no order to agree with. Keys are NFC, so canonically equal strings get one key (below).
        let alphabet: [String] = [
            "a", "b", "z", "A", "Z", "é", "ß", "日", "\u{1F600}", "\0", " ", "~", "aa", "ab", "\u{7F}",
            "\u{80}",
        ]
        var values = alphabet
        for _ in 0..<800 {
            values.append(
                (0..<Int.random(in: 0...5, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
                    .joined())
        }
        expectOrderPreserved(values)
        #expect(bytes("é") == bytes("e\u{301}"))  // canonically equal strings are one key
        #expect(bytes("a\0b").lexicographicallyPrecedes(bytes("a\0c")))
        #expect(bytes("a").lexicographicallyPrecedes(bytes("a\0")))
    }

    @Test func datesUUIDsAndOptionals() {
        var rng = SeededGenerator(seed: Self.seed)
        let dates = (0..<300).map { _ in
            Date(timeIntervalSinceReferenceDate: .random(in: -1e10...1e10, using: &rng))
        }
        expectOrderPreserved(dates)
        let optionals: [Int?] = [nil, 0, -5, 7]
        let sorted = optionals.sorted { bytes($0).lexicographicallyPrecedes(bytes($1)) }
        #expect(sorted == [nil, -5, 0, 7])  // nil first
        let uuid = UUID()
        #expect(bytes(uuid).count == 17)
    }

    @Test func compoundKeysSortComponentByComponent() {
        var rng = SeededGenerator(seed: Self.seed)
        struct Pair: Encodable {
            var a: String
            var b: Int
        }
        var pairs: [(String, Int)] = []
        for _ in 0..<400 {
            pairs.append(
                (
                    ["", "a", "ab", "b", "a\0"].randomElement(using: &rng)!,
                    Int.random(in: -3...3, using: &rng)
                ))
        }
        let encoded = pairs.map { pair -> [UInt8] in
            var key: [UInt8] = []
            try! KeyEncoder().append(pair.0, to: &key)
            try! KeyEncoder().append(pair.1, to: &key)
            return key
        }
        let byBytes = zip(pairs, encoded).sorted { $0.1.lexicographicallyPrecedes($1.1) }.map(\.0)
        let byValue = pairs.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        #expect(byBytes.map(\.0) == byValue.map(\.0))
        #expect(byBytes.map(\.1) == byValue.map(\.1))
    }

    @Test func keysDescribeThemselves() throws {
        #expect(KeyDescription.describe(bytes(42)) == "42")
        #expect(KeyDescription.describe(bytes("milk")) == "\"milk\"")
        let uuid = UUID()
        #expect(KeyDescription.describe(bytes(uuid)) == uuid.uuidString)
        var compound: [UInt8] = []
        try KeyEncoder().append("a", to: &compound)
        try KeyEncoder().append(-3, to: &compound)
        #expect(KeyDescription.describe(compound) == "(\"a\", -3)")
    }

    @Test func longIndexKeysFallBackToPrefixPlusHash() {
        let long = bytes(String(repeating: "x", count: 600))
        let stored = IndexKeyLimit.stored(long)
        #expect(stored.count == IndexKeyLimit.truncatedLength)
        #expect(stored.prefix(500) == long.prefix(500))
        #expect(IndexKeyLimit.stored(bytes(String(repeating: "x", count: 601))) != stored)
        #expect(IndexKeyLimit.stored(bytes("short")) == bytes("short"))
    }
}
