import Foundation
import Testing

@testable import LodeQuery
@testable import LodeStore

/// A model's `@Searchable` properties and `#TextIndex` make full-text indexes the store keeps.
@Suite struct ModelSearchTests {
    @Test func theMarkedIndexesAreSearchable() throws {
        #expect(Article.schema.textIndexes.map(\.name) == ["title+tags", "body"])
        #expect(Article.schema.textIndexes.map(\.fields) == [["title", "tags"], ["body"]])
        let store = try Store.temporary(types: [Article.self])
        try store.write { tx in
            try tx.insert(Article(id: 1, title: "Café notes", tags: ["coffee"], body: "milk and foam"))
            try tx.insert(Article(id: 2, title: "Tea", tags: nil, body: "coffee is not tea"))
        }
        let all = store.objects(Article.self)
        #expect(try all.matching("coffee", in: "title+tags").fetch().map(\.id) == [1])
        #expect(try all.matching("coffee", in: "body").fetch().map(\.id) == [2])
        #expect(try all.matching("cafe", in: "title+tags").fetch().map(\.id) == [1])
        // A field update of a searched property goes through the whole object and its index.
        try store.write { tx in try tx.update(Article.self, key: 2, \.title) { $0 = "Green tea café" } }
        #expect(try all.matching("cafe", in: "title+tags").fetch().map(\.id) == [1, 2])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }
}
