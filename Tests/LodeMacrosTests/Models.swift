import Foundation
import Lode
import LodeMacros

enum Stage: String, Codable, CaseIterable {
    case todo, doing, done
}

struct Address: Codable, Hashable {
    var city: String
    var zip: Int?
}

@Model
struct Project {
    @PrimaryKey var id: Int
    var name: String
}

@Model
struct Everything: Equatable {
    @PrimaryKey var id: UUID
    @Unique var title: String
    @Indexed var stage: Stage
    var count: Int
    var small: Int8
    var unsigned: UInt64
    var ratio: Double
    var single: Float
    var flag: Bool
    var when: Date
    var blob: Data
    var link: URL
    var note: String?
    var tags: [String]
    var scores: Set<Int>
    var byName: [String: Double]
    var byNumber: [Int: String]
    var address: Address
    var previous: Address?
    var maybeStage: Stage?
    var priority: Int = 0
    @Linked(onDelete: .cascade) var project: Link<Project>?
    var related: [Link<Project>]
    @Transient var isSelected = false
    #Index<Everything>(\.stage, \.priority)
}

/// A final class as a model: its record initializer is a member (a class's designated initializer
/// cannot be in an extension).
@Model(name: "Reminder")
final class ReminderObject {
    var id: Int
    var text: String
    var snoozed: Int = 0
    @Transient var isExpanded = false

    init(id: Int, text: String) {
        self.id = id
        self.text = text
    }
}

/// A model that declares `Persistable` itself: the macro adds only what is missing.
@Model
struct Declared: Persistable {
    var id: Int
    var name: String
}

/// A model of more fields than a one-byte map head counts (24): its record's head is longer.
@Model
struct Wide: Equatable {
    var id: Int
    var f0: Int = 0
    var f1: Int = 1
    var f2: Int = 2
    var f3: Int = 3
    var f4: Int = 4
    var f5: Int = 5
    var f6: Int = 6
    var f7: Int = 7
    var f8: Int = 8
    var f9: Int = 9
    var f10: Int = 10
    var f11: Int = 11
    var f12: Int = 12
    var f13: Int = 13
    var f14: Int = 14
    var f15: Int = 15
    var f16: Int = 16
    var f17: Int = 17
    var f18: Int = 18
    var f19: Int = 19
    var f20: Int = 20
    var f21: Int = 21
    var f22: Int = 22
    var f23: Int = 23
    var f24: Int = 24
    var f25: Int = 25
    var f26: Int = 26
    var f27: Int = 27
    var f28: Int = 28
    var f29: Int = 29
}

/// A model with a full-text index from its marks and one declared in its body.
@Model
struct Article: Equatable {
    var id: Int
    @Searchable var title: String
    @Searchable var tags: [String]?
    var body: String
    #TextIndex<Article>(\.body, name: "body")
}

/// SwiftData's versioned-schema pattern: each version's models nested in a namespace type.
enum ShelfV1 {
    @Model(name: "Book")
    struct Book: Equatable {
        var id: Int
        var title: String
    }
}

/// The second version of the same stored type, nested in another namespace.
enum ShelfV2 {
    @Model(name: "Book", version: 2)
    struct Book: Equatable {
        var id: Int
        var title: String
        @Indexed var pages: Int = 0
        var subtitle: String?
    }
}

/// Properties named with keywords, in backticks.
@Model
struct Keywords: Equatable {
    var id: Int
    @Indexed var `default`: Bool
    var `self`: Int
    var `class`: String? = "none"
    var `for`: [String] = []
}

/// Indexes and uniqueness constraints declared as SwiftData declares them.
@Model
struct Trip: Equatable {
    var id: UUID
    var name: String
    var start: Int
    var end: Int
    var country: String
    var city: String
    var code: String
    #Index<Trip>([\.name], [\.start, \.end])
    #Unique<Trip>([\.code], [\.country, \.city, \.name])
}

/// A contact as an earlier version stored it.
@Model(name: "Contact")
struct ContactV1: Equatable {
    var id: Int
    @Indexed var name: String
    var email: String
}

/// The contact after `name` became `fullName`, declared SwiftData's way.
@Model(name: "Contact", version: 2)
struct ContactV2: Equatable {
    var id: Int
    @Attribute(originalName: "name") @Indexed var fullName: String
    @Attribute(.unique) var email: String
}

/// The same rename through `Codable` and a hand-written schema.
struct CodableContactV2: Persistable, Equatable {
    var id: Int
    var fullName: String
    var email: String
    static let schema = Schema<CodableContactV2>(
        name: "Contact", primaryKey: \.id, indexes: [.on(\.fullName), .unique(\.email)], version: 2,
        originalNames: ["fullName": "name"])
}
