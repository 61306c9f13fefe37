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
