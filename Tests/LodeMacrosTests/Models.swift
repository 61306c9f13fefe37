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
