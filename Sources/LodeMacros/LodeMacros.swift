// The model macro, a product of its own: its plug-in builds against the SwiftSyntax libraries of the
// toolchain with search-path flags, which SwiftPM refuses in a package depended on by version; the
// `Lode` product stays free of them (see the README). What it generates is store-layer code (a
// `Persistable` conformance and a `RecordCodable` one): a file that uses it imports Lode too.

import LodeCodec
import LodeStore
import LodeText

/// Makes a struct or final class a stored model: writes its `Persistable` conformance — the
/// `Schema` from the marks on its properties — and a record codec that reads and writes the
/// stored record straight from and into the properties (`RecordCodable`), with the same bytes as its
/// `Codable` conformance.
///
/// ```swift
/// @Model
/// struct Todo {
///     @PrimaryKey var id: UUID
///     @Unique var title: String
///     @Indexed var status: Status
///     var priority: Int = 0         // older records without the field read 0
///     @Linked(onDelete: .cascade) var project: Link<Project>?
///     @Transient var isSelected = false   // not stored
///     @Searchable var notes: String = ""  // in the type's full-text index
///     #Index<Todo>(\.status, \.priority)
/// }
/// ```
///
/// - Parameters:
///   - name: the type's name in the store (the Swift type name unless set).
///   - version: a number recorded in the catalog, raised when the type changes shape.
@attached(
    extension, conformances: Persistable, RecordCodable, RecordWalking, Identifiable,
    names: named(schema), named(recordFields), named(recordKeyPaths), named(init(record:)),
    named(decodeRecord(_:names:into:)), named(write(record:)), named(walkRecords(_:)),
    named(walkField(_:_:)), arbitrary)
@attached(member, names: named(CodingKeys), named(init(record:)))
public macro Model(name: String? = nil, version: Int = 1) =
    #externalMacro(module: "LodeMacrosPlugin", type: "ModelMacro")

/// The primary key of a `@Model` type (a property named `id` is the key when none is marked).
@attached(peer)
public macro PrimaryKey() = #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// An index on the property.
/// - Parameter name: the index name (the field's name unless set).
@attached(peer)
public macro Indexed(name: String? = nil) =
    #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// A unique index on the property: a second object with the same value is refused.
/// - Parameter name: the index name (the field's name unless set).
@attached(peer)
public macro Unique(name: String? = nil) =
    #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// What `@Attribute` says of a property besides its earlier name.
public struct AttributeOption: Sendable, Equatable {
    let name: String

    /// A unique index on the property, as `@Unique` makes.
    public static let unique = AttributeOption(name: "unique")
}

/// A property's attributes as SwiftData writes them: `@Attribute(.unique)` is a unique index;
/// `@Attribute(originalName: "name")` says an earlier version stored the property as `name`, and
/// opening a store renames that field in the records that still have it (once; no migration to
/// write).
/// - Parameters:
///   - options: `.unique`.
///   - originalName: the field's name in an earlier version (a string literal).
@attached(peer)
public macro Attribute(_ options: AttributeOption..., originalName: String? = nil) =
    #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// The delete rule of a link property (`Link<Target>?` or `[Link<Target>]`; such a property is a link
/// without the mark too, with the rule `.nullify`).
/// - Parameter onDelete: what deleting a target does to the objects that link to it.
@attached(peer)
public macro Linked(onDelete: DeleteRule = .nullify) =
    #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// A property searched by the type's full-text index: every `@Searchable` property (`String`,
/// `String?`, `[String]` or `[String]?`) of a type goes into one index, named after their fields
/// joined with `+`, with Lode's `UnicodeTokenizer`. For another name, tokenizer or several indexes,
/// use `#TextIndex`.
@attached(peer)
public macro Searchable() = #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// A full-text index in a `@Model` type's body: `#TextIndex<Note>(\.title, \.body, name: "text")`.
/// - Parameters:
///   - keyPaths: the properties (`String`, `String?`, `[String]` or `[String]?`).
///   - name: the index name (the field names joined with `+` unless set).
///   - tokenizer: what splits the text into terms.
@freestanding(declaration)
public macro TextIndex<Object>(
    _ keyPaths: PartialKeyPath<Object>..., name: String? = nil,
    tokenizer: any TextTokenizer = UnicodeTokenizer()
) = #externalMacro(module: "LodeMacrosPlugin", type: "SchemaMarkerMacro")

/// A property that is not stored: it needs an initial value, which an object read from the store has.
@attached(peer)
public macro Transient() = #externalMacro(module: "LodeMacrosPlugin", type: "PropertyMarkerMacro")

/// An index on one to three properties, in a `@Model` type's body: `#Index<Todo>(\.status,
/// \.priority)`.
/// - Parameters:
///   - keyPaths: the properties, in key order.
///   - name: the index name (the field names joined with `+` unless set).
@freestanding(declaration)
public macro Index<Object>(_ keyPaths: PartialKeyPath<Object>..., name: String? = nil) =
    #externalMacro(module: "LodeMacrosPlugin", type: "SchemaMarkerMacro")

/// A unique compound index on two or three properties, in a `@Model` type's body:
/// `#Unique<Member>(\.team, \.email)`.
/// - Parameters:
///   - keyPaths: the properties, in key order.
///   - name: the index name (the field names joined with `+` unless set).
@freestanding(declaration)
public macro Unique<Object>(_ keyPaths: PartialKeyPath<Object>..., name: String? = nil) =
    #externalMacro(module: "LodeMacrosPlugin", type: "SchemaMarkerMacro")

/// Indexes written as SwiftData writes them, each list of one to three key paths an index:
/// `#Index<Trip>([\.name], [\.start, \.end])`.
/// - Parameter indexes: the indexes, each its properties in key order.
@freestanding(declaration)
public macro Index<Object>(_ indexes: [PartialKeyPath<Object>]...) =
    #externalMacro(module: "LodeMacrosPlugin", type: "SchemaMarkerMacro")

/// Uniqueness constraints written as SwiftData writes them, each list of one to three key paths a
/// unique index: `#Unique<Person>([\.email], [\.givenName, \.familyName])`.
/// - Parameter constraints: the unique indexes, each its properties in key order.
@freestanding(declaration)
public macro Unique<Object>(_ constraints: [PartialKeyPath<Object>]...) =
    #externalMacro(module: "LodeMacrosPlugin", type: "SchemaMarkerMacro")
