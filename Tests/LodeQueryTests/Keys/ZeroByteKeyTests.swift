import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct ZeroByteKeyTests {
    let tmp = TemporaryDirectory()

    struct Label: Persistable, Equatable {
        var id: String
        var text: String
        var blob: Data
        var rank: Int
        static let schema = Schema<Label>(
            primaryKey: \.id, indexes: [.on(\.text), .on(\.blob), .on(\.text, \.rank)])
    }

    @Test func textAndDataWithZeroBytesAreNotEqualToTheirPrefix() throws {
        let store = try Store(at: tmp.url, types: [Label.self])
        let values = ["a", "a\u{0}", "a\u{0}b", "a\u{0}\u{0}", "ab", ""]
        try store.write { tx in
            for (n, text) in values.enumerated() {
                try tx.insert(Label(id: text, text: text, blob: Data(text.utf8), rank: n))
            }
        }
        for text in values {
            let blob = Data(text.utf8)
            let byText = try store.objects(Label.self).filter(#Predicate { $0.text == text }).fetch()
            #expect(byText.map(\.text) == [text], "index on text, \(Array(text.utf8))")
            let byID = try store.objects(Label.self).filter(#Predicate { $0.id == text }).fetch()
            #expect(byID.map(\.text) == [text], "primary key, \(Array(text.utf8))")
            let byBlob = try store.objects(Label.self).filter(#Predicate { $0.blob == blob }).fetch()
            #expect(byBlob.map(\.text) == [text], "index on data, \(Array(text.utf8))")
            let above = try store.objects(Label.self).filter(#Predicate { $0.text > text }).fetch()
            #expect(Set(above.map(\.text)) == Set(values.filter { $0 > text }), "range \(Array(text.utf8))")
            let atMost = try store.objects(Label.self).filter(#Predicate { $0.text <= text }).fetch()
            #expect(Set(atMost.map(\.text)) == Set(values.filter { $0 <= text }), "range \(Array(text.utf8))")
            let compound = try store.objects(Label.self).filter(
                #Predicate { $0.text == text && $0.rank >= 0 }
            )
            .fetch()
            #expect(compound.map(\.text) == [text], "compound, \(Array(text.utf8))")
        }
    }
}

extension ZeroByteKeyTests {
    /// A scan places each key it reads in place with `memcmp`; it must place it where the byte-by-byte
    /// comparison of values places it, zero bytes, `FF` continuations and prefixes included.
    @Test func aKeyReadInPlaceLiesWhereItsBytesLie() {
        var rng = SeededGenerator(seed: 0x4b_e7a9)
        let alphabet: [UInt8] = [0x00, 0x01, 0x40, 0x61, 0x62, 0xFE, 0xFF]
        func bytes(upTo length: Int) -> [UInt8] {
            (0..<Int.random(in: 0...length, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
        }
        for _ in 0..<20_000 {
            let prefix = Int.random(in: 0..<3, using: &rng) == 0 ? bytes(upTo: 2) : []
            let range = KeyRange(
                prefix: prefix, lower: Bool.random(using: &rng) ? prefix + bytes(upTo: 3) : nil,
                lowerInclusive: Bool.random(using: &rng),
                upper: Bool.random(using: &rng) ? prefix + bytes(upTo: 3) : nil,
                upperInclusive: Bool.random(using: &rng))
            let key = Bool.random(using: &rng) ? prefix + bytes(upTo: 4) : bytes(upTo: 5)
            let inPlace = key.withUnsafeBytes { range.position(of: $0) }
            #expect(inPlace == range.position(of: key[...]), "\(key) in \(range)")
        }
    }
}

extension ZeroByteKeyTests {
    /// Keys are put in key order by their leading words first and their bytes on a tie; the order
    /// must be LMDB's (bytes unsigned, a key before the longer keys it begins), equal keys in list
    /// order, for keys of any length and of every byte.
    @Test func keysSortedByLeadingWordsAreInByteOrder() {
        var rng = SeededGenerator(seed: 0x77_0b1d)
        let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFF]
        for round in 0..<400 {
            var list = KeyList()
            var keys: [[UInt8]] = []
            if round % 2 == 0 {
                // Short lists of keys of any bytes (a comparison sort).
                for _ in 0..<Int.random(in: 0...40, using: &rng) {
                    keys.append(
                        (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                            alphabet.randomElement(using: &rng)!
                        })
                }
            } else {
                // Longer lists of keys that differ in a few bytes, as integer keys do (a radix sort by
                // those bytes, an odd or even number of passes), some cut short, some past sixteen
                // bytes (ties in the leading words).
                let template = (0..<Int.random(in: 0...20, using: &rng)).map { _ in
                    alphabet.randomElement(using: &rng)!
                }
                let varying = (0..<Swift.max(template.count, 1)).shuffled(using: &rng).prefix(
                    Int.random(in: 1...6, using: &rng))
                for _ in 0..<Int.random(in: 64...300, using: &rng) {
                    var key = template
                    for position in varying where position < key.count {
                        key[position] = alphabet.randomElement(using: &rng)!
                    }
                    if Int.random(in: 0..<10, using: &rng) == 0 {
                        key = Array(key.prefix(Int.random(in: 0...key.count, using: &rng)))
                    }
                    keys.append(key)
                }
            }
            for key in keys { list.append(key) }
            let want = keys.enumerated().sorted { lhs, rhs in
                lhs.element.lexicographicallyPrecedes(rhs.element)
                    || (lhs.element == rhs.element && lhs.offset < rhs.offset)
            }.map(\.offset)
            #expect(list.keyOrder() == want, "\(keys)")
        }
    }
}
