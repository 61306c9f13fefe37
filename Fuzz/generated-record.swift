// Generated: the model macro's record codec for the fuzz harness's `FuzzRecord` (the
// declaration is in Tests/LodeMacrosTests/ModelExpansionTests.swift, FuzzModelTests, which
// checks this file; run it with LODE_UPDATE_FUZZ_MODEL=1 to write it again).

import Foundation

extension FuzzRecord: RecordCodable {
    static let recordFields = RecordFieldNames([
        "id", "title", "tags", "due", "score", "nested", "owner", "blob", "state", "rank", "stage",
    ])

    static var recordKeyPaths: [PartialKeyPath<FuzzRecord>] {
        [\.id, \.title, \.tags, \.due, \.score, \.nested, \.owner, \.blob, \.state, \.rank, \.stage]
    }

    init(record: inout RecordReader) throws {
        var _id: Int? = nil
        var _title: String? = nil
        var _tags: [String]? = nil
        var _due: Date? = nil
        var _score: Double? = nil
        var _nested: [String: Int]? = nil
        var _owner: UUID? = nil
        var _blob: Data? = nil
        var _state: FuzzState? = nil
        var _rank: Int8? = nil
        var _stage: FuzzStage? = nil
        if record.nextFieldIs(0) {
            _id = try record.decode((Int).self)
        }
        if record.nextFieldIs(1) {
            _title = try record.decode((String).self)
        }
        if record.nextFieldIs(2) {
            _tags = try record.decode(Self.lodeStoredTags(([String]).self))
        }
        if record.nextFieldIs(3) {
            _due = try record.decodeIfPresent((Date).self)
        }
        if record.nextFieldIs(4) {
            _score = try record.decode((Double).self)
        }
        if record.nextFieldIs(5) {
            _nested = try record.decode(Self.lodeStoredNested(([String: Int]).self))
        }
        if record.nextFieldIs(6) {
            _owner = try record.decodeIfPresent((UUID).self)
        }
        if record.nextFieldIs(7) {
            _blob = try record.decodeIfPresent((Data).self)
        }
        if record.nextFieldIs(8) {
            _state = try record.decodeIfPresent(Self.lodeStoredState((FuzzState).self))
        }
        if record.nextFieldIs(9) {
            _rank = try record.decode((Int8).self)
        }
        if record.nextFieldIs(10) {
            _stage = try record.decodeIfPresent(Self.lodeStoredStage((FuzzStage).self))
        }
        while let field = try record.nextField() {
            switch field {
            case 0:
                _id = try record.decode((Int).self)
            case 1:
                _title = try record.decode((String).self)
            case 2:
                _tags = try record.decode(Self.lodeStoredTags(([String]).self))
            case 3:
                _due = try record.decodeIfPresent((Date).self)
            case 4:
                _score = try record.decode((Double).self)
            case 5:
                _nested = try record.decode(Self.lodeStoredNested(([String: Int]).self))
            case 6:
                _owner = try record.decodeIfPresent((UUID).self)
            case 7:
                _blob = try record.decodeIfPresent((Data).self)
            case 8:
                _state = try record.decodeIfPresent(Self.lodeStoredState((FuzzState).self))
            case 9:
                _rank = try record.decode((Int8).self)
            case 10:
                _stage = try record.decodeIfPresent(Self.lodeStoredStage((FuzzStage).self))
            default:
                try record.skipValue()
            }
        }
        guard let _id else {
            throw RecordDecodingError.missing("id")
        }
        self.id = _id
        guard let _title else {
            throw RecordDecodingError.missing("title")
        }
        self.title = _title
        guard let _tags else {
            throw RecordDecodingError.missing("tags")
        }
        self.tags = _tags
        self.due = _due
        guard let _score else {
            throw RecordDecodingError.missing("score")
        }
        self.score = _score
        guard let _nested else {
            throw RecordDecodingError.missing("nested")
        }
        self.nested = _nested
        self.owner = _owner
        self.blob = _blob
        self.state = _state
        self.rank = _rank ?? 0
        self.stage = _stage
    }

    static func decodeRecord(
        _ bytes: UnsafeRawBufferPointer, names: RecordFieldNames, into object: UnsafeMutableRawPointer
    ) throws {
        object.assumingMemoryBound(to: FuzzRecord.self).initialize(
            to: try FuzzRecord.decodeRecord(bytes, names: names))
    }

    func write(record: inout RecordWriter) throws {
        try record.encode(self.id, field: 0)
        try record.encode(self.title, field: 1)
        try record.encode(self.tags, field: 2)
        try record.encodeIfPresent(self.due, field: 3)
        try record.encode(self.score, field: 4)
        try record.encode(self.nested, field: 5)
        try record.encodeIfPresent(self.owner, field: 6)
        try record.encodeIfPresent(self.blob, field: 7)
        try record.encodeIfPresent(self.state, field: 8)
        try record.encode(self.rank, field: 9)
        try record.encodeIfPresent(self.stage, field: 10)
    }

    @available(
        *, unavailable,
        message:
            "@Model stores 'tags' through Codable, and [String] is not Codable: make [String] Codable, or mark 'tags' @Transient (not stored)"
    )
    private static func lodeStoredTags<V>(_ type: V.Type) -> V.Type {
        type
    }

    private static func lodeStoredTags<V: Codable>(_ type: V.Type) -> V.Type {
        type
    }

    @available(
        *, unavailable,
        message:
            "@Model stores 'nested' through Codable, and [String: Int] is not Codable: make [String: Int] Codable, or mark 'nested' @Transient (not stored)"
    )
    private static func lodeStoredNested<V>(_ type: V.Type) -> V.Type {
        type
    }

    private static func lodeStoredNested<V: Codable>(_ type: V.Type) -> V.Type {
        type
    }

    @available(
        *, unavailable,
        message:
            "@Model stores 'state' through Codable, and FuzzState is not Codable: make FuzzState Codable, or mark 'state' @Transient (not stored)"
    )
    private static func lodeStoredState<V>(_ type: V.Type) -> V.Type {
        type
    }

    private static func lodeStoredState<V: Codable>(_ type: V.Type) -> V.Type {
        type
    }

    @available(
        *, unavailable,
        message:
            "@Model stores 'stage' through Codable, and FuzzStage is not Codable: make FuzzStage Codable, or mark 'stage' @Transient (not stored)"
    )
    private static func lodeStoredStage<V>(_ type: V.Type) -> V.Type {
        type
    }

    private static func lodeStoredStage<V: Codable>(_ type: V.Type) -> V.Type {
        type
    }
}
