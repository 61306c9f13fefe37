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
