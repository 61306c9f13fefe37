import Foundation
import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import Testing

@testable import LodeMacrosExpansion
@testable import LodeTestSupport

/// The model macro's expansion of a declaration, and what it reports: run in this process with the
/// toolchain's SwiftSyntax, as the compiler runs the plug-in.
struct Expansion {
    var source: String
    var diagnostics: [(line: Int, column: Int, message: String)]

    init(_ text: String) {
        let file = Parser.parse(source: text)
        let context = BasicMacroExpansionContext(
            sourceFiles: [file: .init(moduleName: "App", fullFilePath: "Model.swift")])
        let marker = MacroSpec(type: PropertyMarkerMacro.self)
        let expanded = file.expand(
            macroSpecs: [
                "Model": MacroSpec(
                    type: ModelMacro.self, conformances: ["Persistable", "RecordCodable", "Identifiable"]),
                "PrimaryKey": marker, "Indexed": marker, "Unique": marker, "Linked": marker,
                "Transient": marker, "Attribute": marker,
                "Index": MacroSpec(type: SchemaMarkerMacro.self),
            ],
            contextGenerator: { _ in context })
        source = expanded.description
        let converter = SourceLocationConverter(fileName: "Model.swift", tree: file)
        // `#Unique` is expanded as `@Unique` is (one spec for a name): what that says of the
        // freestanding form is the harness's, not the macro's.
        let harness = "does not conform to any freestanding macro protocol"
        diagnostics = context.diagnostics.filter { !$0.message.contains(harness) }.map { diagnostic in
            let location = diagnostic.location(converter: converter)
            return (location.line, location.column, diagnostic.message)
        }
    }

    /// The messages, as `line:column: message`.
    var messages: [String] { diagnostics.map { "\($0.line):\($0.column): \($0.message)" } }
}

@Suite struct ModelExpansionTests {
    @Test func aModelGetsItsSchemaAndCodec() {
        let expansion = Expansion(
            """
            @Model
            public struct Todo {
                @PrimaryKey var id: UUID
                @Unique var title: String
                @Indexed(name: "by-status") var status: Status
                var note: String?
                var priority: Int = 0
                @Linked(onDelete: .cascade) var project: Link<Project>?
                var tags: [Link<Tag>]
                @Transient var isSelected = false
                var computed: Int { priority * 2 }
                static var shared = 1
                #Index<Todo>(\\.status, \\.priority)
            }
            """)
        #expect(expansion.messages == [])
        let text = expansion.source
        #expect(text.contains("extension Todo: Persistable, RecordCodable {"))
        #expect(
            text.contains(
                """
                public static let schema = Schema<Todo>(
                        primaryKey: \\.id,
                        indexes: [.unique(\\.title), .on(\\.status, name: "by-status"), .on(\\.status, \\.priority)],
                        links: [.to(\\.project, onDelete: .cascade), .toMany(\\.tags)],
                        defaults: [.field(\\.priority, 0)]
                    )
                """))
        #expect(
            text.contains(
                #"public static let recordFields = RecordFieldNames(["id", "title", "status", "note", "priority", "project", "tags"])"#
            ))
        // Stored fields only: the transient, computed and static properties are not fields.
        #expect(text.contains("public enum CodingKeys: String, CodingKey {"))
        #expect(text.contains("case id, title, status, note, priority, project, tags"))
        #expect(text.contains("_note = try record.decodeIfPresent((String).self)"))
        #expect(text.contains("self.priority = _priority ?? 0"))
        #expect(text.contains(#"throw RecordDecodingError.missing("title")"#))
        #expect(!text.contains(#"RecordDecodingError.missing("note")"#), "an optional may be missing")
        #expect(text.contains("try record.encodeIfPresent(self.note, field: 3)"))
        #expect(text.contains("try record.encode(self.tags, field: 6)"))
        #expect(!text.contains("isSelected, "))
    }

    @Test func searchablePropertiesAndTextIndexesMakeFullTextIndexes() {
        let expansion = Expansion(
            """
            @Model
            struct Note {
                var id: Int
                @Searchable var title: String
                @Searchable var tags: [String]?
                var body: String
                var stars: Int
                #TextIndex<Note>(\\.body, name: "body", tokenizer: StemmingTokenizer())
            }
            """)
        #expect(expansion.messages == [])
        #expect(
            expansion.source.contains(
                #"textIndexes: [.on(\.title, \.tags), .on(\.body, name: "body", tokenizer: StemmingTokenizer())]"#
            ))
        let wrong = Expansion(
            """
            @Model
            struct Note {
                var id: Int
                @Searchable var stars: Int
                var computed: String { "" }
                #TextIndex<Note>(name: "none")
            }
            """)
        #expect(
            wrong.messages == [
                "4:5: @Searchable marks text: String, String?, [String] or [String]?, not Int",
                "6:5: #TextIndex takes at least one key path",
            ])
    }

    @Test func anIdPropertyIsTheKeyWhenNoneIsMarked() {
        let expansion = Expansion(
            """
            @Model(name: "Note", version: 3)
            final class Memo {
                var id: Int
                var text = ""
                init(id: Int) { self.id = id }
            }
            """)
        #expect(expansion.messages == [])
        #expect(expansion.source.contains("name: \"Note\","))
        #expect(expansion.source.contains("primaryKey: \\.id,"))
        #expect(expansion.source.contains("version: 3,"))
        // A class's designated initializer is a member, not in the extension.
        #expect(expansion.source.contains("init(record: inout RecordReader) throws {"))
        #expect(expansion.source.contains("var _text: String? = nil"))
        // The decode into memory of its own names the class, not `Self` (a class's `Self` is dynamic).
        #expect(expansion.source.contains("object.assumingMemoryBound(to: Memo.self).initialize("))
    }

    @Test func aNestedModelIsNamedByItsQualifiedNameInTheExtension() {
        let expansion = Expansion(
            """
            enum SchemaV1 {
                @Model struct Item { var id: Int; var name: String }
            }
            """)
        #expect(expansion.messages == [])
        let text = expansion.source
        #expect(text.contains("extension SchemaV1.Item: Persistable, RecordCodable, Identifiable {"))
        #expect(text.contains("static let schema = Schema<SchemaV1.Item>("))
        #expect(text.contains("static var recordKeyPaths: [PartialKeyPath<SchemaV1.Item>] {"))
        #expect(text.contains("object.assumingMemoryBound(to: SchemaV1.Item.self).initialize("))
    }

    @Test func propertiesNamedWithKeywordsKeepTheirBackticksInCodeOnly() {
        let expansion = Expansion(
            """
            @Model
            struct Flags {
                var id: Int
                @Indexed var `default`: Bool
                var `self`: Int = 0
                @Transient var cache = 0
            }
            """)
        #expect(expansion.messages == [])
        let text = expansion.source
        #expect(text.contains(#"RecordFieldNames(["id", "default", "self"])"#))
        #expect(text.contains("[\\.id, \\.`default`, \\.`self`]"))
        #expect(text.contains("indexes: [.on(\\.`default`)]"))
        #expect(text.contains("defaults: [.field(\\.`self`, 0)]"))
        #expect(text.contains("var _default: Bool? = nil"))
        #expect(text.contains("self.`default` = _default"))
        #expect(text.contains(#"throw RecordDecodingError.missing("default")"#))
        #expect(text.contains("try record.encode(self.`self`, field: 2)"))
        #expect(text.contains("case id, `default`, `self`"))
    }

    @Test func aPropertyOfAnotherTypeGoesThroughACheckThatNamesIt() {
        let expansion = Expansion(
            """
            @Model
            struct Shape {
                var id: Int
                var name: String?
                var outline: Outline
                var corners: [Point]? = []
                @Linked var owner: Link<Person>?
            }
            """)
        #expect(expansion.messages == [])
        let text = expansion.source
        // Types every model stores and links pass straight through; the others through a check.
        #expect(text.contains("_name = try record.decodeIfPresent((String).self)"))
        #expect(text.contains("_outline = try record.decode(Self.lodeStoredOutline((Outline).self))"))
        #expect(
            text.contains("_corners = try record.decodeIfPresent(Self.lodeStoredCorners(([Point]).self))"))
        #expect(!text.contains("lodeStoredOwner") && !text.contains("lodeStoredName"))
        #expect(
            text.contains(
                #"@available(*, unavailable, message: "@Model stores 'outline' through Codable, and Outline is not Codable: make Outline Codable, or mark 'outline' @Transient (not stored)")"#
            ))
        #expect(
            text.contains("private static func lodeStoredOutline<V: Codable>(_ type: V.Type) -> V.Type"))
        // An optional with an initial value writes its nil as null.
        #expect(text.contains("try record.encodeOrNull(self.corners, field: 3)"))
        #expect(text.contains("try record.encodeIfPresent(self.name, field: 1)"))
    }

    @Test func swiftDataIndexListsAndUniquenessConstraintsAreIndexes() {
        let expansion = Expansion(
            """
            @Model
            struct Trip {
                var id: UUID
                var name: String
                var start: Date
                var end: Date
                var code: String
                var country: String
                var city: String
                #Index<Trip>([\\.name], [\\.start, \\.end])
                #Unique<Trip>([\\.code], [\\.country, \\.city, \\.name])
                #Unique<Trip>(\\.start, \\.city, \\.end)
            }
            """)
        #expect(expansion.messages == [])
        #expect(
            expansion.source.contains(
                #"indexes: [.on(\.name), .on(\.start, \.end), .unique(\.code), .unique(\.country, \.city, \.name), .unique(\.start, \.city, \.end)]"#
            ), "\(expansion.source)")
        // An `id` of a type known to be Hashable makes the model Identifiable.
        #expect(expansion.source.contains("extension Trip: Persistable, RecordCodable, Identifiable {"))
        let wrong = Expansion(
            """
            @Model
            struct Trip {
                var id: Int
                var a: Int
                #Index<Trip>([\\.a], \\.id)
                #Unique<Trip>([\\.a, \\.id, \\.a, \\.id])
                #Index<Trip>([id])
            }
            """)
        #expect(
            wrong.messages == [
                "5:25: #Index takes key paths (`\\.a, \\.b`) or lists of them, one list for each index (`[\\.a], [\\.b, \\.c]`), not both",
                "6:19: an index of #Unique takes one to 3 key paths, not 4",
                "7:19: #Index's lists hold key paths (`\\.field`)",
            ])
    }

    @Test func identifiableComesWithAnIdOfAKnownHashableTypeAsVisibleAsTheType() {
        func conformances(_ declaration: String) -> String? {
            let text = Expansion(declaration).source
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("extension ") }) else {
                return nil
            }
            return String(line)
        }
        #expect(
            conformances("@Model struct A { var id: String }")
                == "extension A: Persistable, RecordCodable, Identifiable {")
        #expect(
            conformances("@Model public struct B { public var id: Int }")
                == "extension B: Persistable, RecordCodable, Identifiable {")
        // A public type with an internal id, a key of another type, no id at all: no Identifiable.
        #expect(
            conformances("@Model public struct C { var id: Int }")
                == "extension C: Persistable, RecordCodable {")
        #expect(
            conformances("@Model struct D { var id: Code }") == "extension D: Persistable, RecordCodable {")
        #expect(
            conformances("@Model struct E { @PrimaryKey var key: Int }")
                == "extension E: Persistable, RecordCodable {")
    }

    @Test func attributesGiveUniqueIndexesAndEarlierNames() {
        let expansion = Expansion(
            """
            @Model
            struct Contact {
                var id: Int
                @Attribute(originalName: "name") @Indexed var fullName: String
                @Attribute(.unique) var email: String
                @Attribute(.unique, originalName: "phone") var mobile: String?
            }
            """)
        #expect(expansion.messages == [])
        #expect(
            expansion.source.contains("indexes: [.on(\\.fullName), .unique(\\.email), .unique(\\.mobile)],"))
        #expect(expansion.source.contains(#"originalNames: ["fullName": "name", "mobile": "phone"]"#))
        let wrong = Expansion(
            """
            @Model
            struct Contact {
                @Attribute(originalName: "key") var id: Int
                @Attribute(originalName: title) var name: String
                @Attribute(originalName: "email") var address: String
                var email: String
                @Attribute(.externalStorage) var photo: Data
                @Attribute(.unique) @Unique var code: String
            }
            """)
        #expect(
            wrong.messages == [
                "4:30: originalName is the earlier field's name as a string literal (\"title\")",
                "7:16: @Attribute takes .unique and originalName: \"…\" (SwiftData's other options have no meaning here)",
                "8:5: code is indexed already: remove .unique or the other mark",
                "3:41: a primary key cannot be renamed by originalName: write a migration that changes the primary key",
                "5:43: address's originalName \"email\" is another stored property",
            ])
    }

    @Test func misuseIsReportedWhereItIs() {
        let cases: [(String, [String])] = [
            (
                """
                @Model
                struct NoKey {
                    var name: String
                }
                """,
                ["1:1: NoKey has no primary key: mark one stored property @PrimaryKey (or name it `id`)"]
            ),
            (
                """
                @Model
                struct TwoKeys {
                    @PrimaryKey var a: Int
                    @PrimaryKey var b: Int
                }
                """,
                ["4:21: a @Model type has one primary key; a is already one"]
            ),
            (
                """
                @Model
                struct Computed {
                    @PrimaryKey var id: Int
                    @Indexed var double: Int { id * 2 }
                }
                """,
                ["4:5: double is a computed property: only stored properties are stored, indexed or linked"]
            ),
            (
                """
                @Model
                enum Kind {
                    case a
                }
                """,
                ["2:1: @Model applies to a struct or a final class, not to an enum"]
            ),
            (
                """
                @Model
                class Open {
                    var id: Int = 0
                }
                """,
                ["2:1: @Model applies to a final class: write `final class Open`"]
            ),
            (
                """
                @Model
                struct Optional {
                    @PrimaryKey var id: Int?
                }
                """,
                ["3:21: a primary key cannot be optional"]
            ),
            (
                """
                @Model
                struct Untyped {
                    var id: Int
                    var made = Date()
                }
                """,
                ["4:9: write made's type (`var made: Type = …`): @Model reads each field by its type"]
            ),
            (
                """
                @Model
                struct Constant {
                    var id: Int
                    let kind = "x"
                }
                """,
                [
                    "4:5: kind is a constant with an initial value: it would be written but never read back; make it `var`, or mark it @Transient"
                ]
            ),
            (
                """
                @Model
                struct NotALink {
                    var id: Int
                    @Linked var owner: Int
                }
                """,
                [
                    "4:5: @Linked marks a link property: `Link<Target>?` (to-one) or `[Link<Target>]` (to-many), not Int"
                ]
            ),
            (
                """
                @Model
                struct Transients {
                    var id: Int
                    @Transient var cache: [Int]
                }
                """,
                ["4:5: a @Transient property needs an initial value (it is not stored)"]
            ),
            (
                """
                @Model
                struct Generic<T> {
                    var id: Int
                }
                """,
                ["2:15: a @Model type cannot be generic: its schema is one value for the type"]
            ),
            (
                """
                @Model
                struct Keys {
                    var id: Int
                    enum CodingKeys: String, CodingKey { case id }
                }
                """,
                [
                    "4:10: a @Model type's stored fields are its stored properties: mark the ones not to store @Transient instead of declaring CodingKeys"
                ]
            ),
            (
                """
                @Model
                struct Lowered {
                    var id: Int
                    var name: String
                    func encode(to encoder: any Encoder) throws {}
                    init(from decoder: any Decoder) throws { fatalError() }
                }
                """,
                [
                    "5:10: a @Model type's records are written by its generated codec, which would not call encode(to:): remove it (mark a property @Transient to leave it out), or drop @Model and declare Persistable yourself",
                    "6:5: a @Model type's records are read by its generated codec, which would not call init(from:): remove it (an initial value, `var priority: Int = 1`, is what a record without the field reads), or drop @Model and declare Persistable yourself",
                ]
            ),
        ]
        for (source, expected) in cases {
            let expansion = Expansion(source)
            #expect(expansion.messages == expected, "\(source)")
            #expect(!expansion.source.contains("extension"), "nothing is generated for \(source)")
        }
    }
}

/// The fuzz harness's generated record decoder (Fuzz/generated-record.swift) is the macro's expansion
/// of the harness's record type: the harness is built by `swiftc` alone, without the plug-in, so it
/// keeps the expansion in a file this test holds to the macro (`LODE_UPDATE_FUZZ_MODEL=1` rewrites
/// it).
@Suite struct FuzzModelTests {
    static let declaration = """
        @Model
        struct FuzzRecord {
            var id: Int
            var title: String
            var tags: [String]
            var due: Date?
            var score: Double
            var nested: [String: Int]
            var owner: UUID?
            var blob: Data?
            var state: FuzzState?
            var rank: Int8 = 0
            var stage: FuzzStage?
        }
        """

    /// The `RecordCodable` members of the expansion, as the harness's file holds them.
    static func generatedFile() -> String {
        let expansion = Expansion(declaration)
        let file = Parser.parse(source: expansion.source)
        var members: [String] = []
        for statement in file.statements {
            guard let extensionDecl = statement.item.as(ExtensionDeclSyntax.self) else { continue }
            for member in extensionDecl.memberBlock.members {
                // The first line without its indentation, the others with theirs.
                let text = member.decl.trimmedDescription
                // The schema and the walks belong to the store, which the harness does not build.
                if text.contains("schema") || text.contains("RecordWalk") { continue }
                members.append("    " + text)
            }
        }
        return """
            // Generated: the model macro's record codec for the fuzz harness's `FuzzRecord` (the
            // declaration is in Tests/LodeMacrosTests/ModelExpansionTests.swift, FuzzModelTests, which
            // checks this file; run it with LODE_UPDATE_FUZZ_MODEL=1 to write it again).

            import Foundation

            extension FuzzRecord: RecordCodable {
            \(members.joined(separator: "\n\n"))
            }

            """
    }

    /// `text` as `swift format` writes it (the file is held to the repository's style like the rest).
    static func formatted(_ text: String) throws -> String {
        let directory = TemporaryDirectory("format")
        let file = directory.url.appendingPathComponent("generated.swift")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let result = try shell(
            "swift format format --configuration '\(root.path)/.swift-format' --in-place '\(file.path)'")
        #expect(result.status == 0, "\(result.err)")
        return try String(contentsOf: file, encoding: .utf8)
    }

    @Test func theHarnessHoldsTheMacrosExpansion() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/generated-record.swift")
        let expected = try Self.formatted(Self.generatedFile())
        if ProcessInfo.processInfo.environment["LODE_UPDATE_FUZZ_MODEL"] == "1" {
            try expected.write(to: url, atomically: true, encoding: .utf8)
        }
        let stored = try String(contentsOf: url, encoding: .utf8)
        #expect(
            stored == expected,
            "Fuzz/generated-record.swift is not the macro's expansion: run LODE_UPDATE_FUZZ_MODEL=1 swift test --filter FuzzModelTests"
        )
        #expect(expected.contains("init(record: inout RecordReader) throws"))
    }
}
