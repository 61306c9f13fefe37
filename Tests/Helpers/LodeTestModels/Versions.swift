import Foundation
import LodeCodec
import LodeMacros
import LodeStore

// Two versions of one type, as two releases of an app declare it: version 2 adds an optional
// `color` and an indexed `rank` with a default. One pair goes through `Codable`, one through the
// generated codec.

/// Version 1 of a note, through `Codable`.
struct VersionedNoteV1: Persistable, Equatable {
    var id: Int
    var title: String
    static let schema = Schema<VersionedNoteV1>(name: "VersionedNote", primaryKey: \.id)
}

/// Version 2 of the note: `color` and an indexed `rank` added.
struct VersionedNoteV2: Persistable, Equatable {
    var id: Int
    var title: String
    var color: String?
    var rank: Int
    static let schema = Schema<VersionedNoteV2>(
        name: "VersionedNote", primaryKey: \.id, indexes: [.on(\.rank)], version: 2,
        defaults: [.field(\.rank, 0)])
}

/// Version 1 of a generated note.
@Model(name: "GeneratedNote")
struct GeneratedNoteV1: Equatable {
    @PrimaryKey var id: Int
    var title: String
}

/// Version 2 of the generated note: `color` and an indexed `rank` added.
@Model(name: "GeneratedNote", version: 2)
struct GeneratedNoteV2: Equatable {
    @PrimaryKey var id: Int
    var title: String
    var color: String?
    @Indexed var rank: Int = 0
}

// An app update's versions of one item, each pair through `Codable` and the generated codec:
// version 1 stores `payload` with a unique index on `tag`; the newer versions drop `payload` and add
// `priority` with a default (DroppedAndAdded), add an indexed `priority` and keep the rest
// (AddedIndexed), or also rename `tag` to `label` by a migration (Renamed).

/// Version 1 of the item, through `Codable`.
struct AppItemV1: Persistable, Equatable {
    var id: Int
    var batch: Int
    var tag: String
    var payload: String
    static let schema = Schema<AppItemV1>(
        name: "AppItem", primaryKey: \.id, indexes: [.on(\.batch), .unique(\.tag)])
}

/// A newer item that dropped `payload` and added `priority` with a default.
struct AppItemDroppedAndAdded: Persistable, Equatable {
    var id: Int
    var batch: Int
    var tag: String
    var priority: Int
    static let schema = Schema<AppItemDroppedAndAdded>(
        name: "AppItem", primaryKey: \.id, indexes: [.on(\.batch)], version: 2,
        defaults: [.field(\.priority, 0)])
}

/// A newer item that added an indexed `priority` with a default.
struct AppItemAddedIndexed: Persistable, Equatable {
    var id: Int
    var batch: Int
    var tag: String
    var payload: String
    var priority: Int
    static let schema = Schema<AppItemAddedIndexed>(
        name: "AppItem", primaryKey: \.id, indexes: [.on(\.batch), .unique(\.tag), .on(\.priority)],
        version: 2, defaults: [.field(\.priority, 0)])
}

/// A newer item that renamed `tag` to `label` (by a migration), dropped `payload` and added
/// `priority` with a default.
struct AppItemRenamed: Persistable, Equatable {
    var id: Int
    var batch: Int
    var label: String
    var priority: Int
    static let schema = Schema<AppItemRenamed>(
        name: "AppItem", primaryKey: \.id, indexes: [.on(\.batch), .unique(\.label)], version: 3,
        defaults: [.field(\.priority, 0)])
}

/// Version 1 of the generated item.
@Model(name: "GeneratedAppItem")
struct GeneratedAppItemV1: Equatable {
    var id: Int
    @Indexed var batch: Int
    @Unique var tag: String
    var payload: String
}

/// The generated item that dropped `payload` and added `priority` with a default.
@Model(name: "GeneratedAppItem", version: 2)
struct GeneratedAppItemDroppedAndAdded: Equatable {
    var id: Int
    @Indexed var batch: Int
    var tag: String
    var priority: Int = 0
}

/// The generated item that added an indexed `priority` with a default.
@Model(name: "GeneratedAppItem", version: 2)
struct GeneratedAppItemAddedIndexed: Equatable {
    var id: Int
    @Indexed var batch: Int
    @Unique var tag: String
    var payload: String
    @Indexed var priority: Int = 0
}

/// The generated item that renamed `tag` to `label`, dropped `payload` and added `priority`.
@Model(name: "GeneratedAppItem", version: 3)
struct GeneratedAppItemRenamed: Equatable {
    var id: Int
    @Indexed var batch: Int
    @Unique var label: String
    var priority: Int = 0
}
