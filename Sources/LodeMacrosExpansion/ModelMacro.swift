import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Model`: writes a type's `Persistable` conformance — its `Schema` from the marks on its
/// properties — and its `RecordCodable` conformance: a record codec straight between the properties
/// and the stored CBOR map.
///
/// The generated names are unqualified (`Schema`, `RecordReader`…): the file imports Lode.
public struct ModelMacro: ExtensionMacro, MemberMacro {
    /// The conformances, the schema, the field names and (for a struct) the record codec.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard
            var model = try? ModelDeclaration(
                declaration, attribute: node, diagnose: { context.diagnose($0) })
        else { return [] }
        // The extension is outside the type's scope: a type nested in another (`enum SchemaV1 {
        // @Model struct Item … }`) is named by its qualified name there.
        model.typeName = type.trimmedDescription
        // The compiler names the conformances the type does not have yet (none when it declares both).
        var conformances = ["Persistable", "RecordCodable", "RecordWalking"].filter { name in
            protocols.contains { $0.trimmedDescription.hasSuffix(name) }
        }
        // `Identifiable` through the `id` property, as SwiftData's models are: when its type is one
        // known to be `Hashable` (the macro cannot see others'), and as visible as the type.
        if protocols.contains(where: { $0.trimmedDescription.hasSuffix("Identifiable") }),
            let id = model.properties.first(where: { $0.name == "id" }), !id.isOptional,
            storedTypes.contains(id.type), model.access.isEmpty || id.access == model.access
        {
            conformances.append("Identifiable")
        }
        let inherit = conformances.isEmpty ? "" : ": " + conformances.joined(separator: ", ")
        var members = [schema(model), fieldNames(model)]
        if !model.isClass { members.append(initializer(model)) }
        members.append(inPlaceDecoder(model))
        members.append(writer(model))
        members.append(walks(model))
        members += model.properties.filter(needsTypeCheck).map(typeCheck)
        let text = "extension \(type.trimmedDescription)\(inherit) {\n\(members.joined(separator: "\n\n"))\n}"
        return [DeclSyntax(stringLiteral: text).cast(ExtensionDeclSyntax.self)]
    }

    /// For a class, the record initializer (a class's designated initializer cannot be in an
    /// extension); for any type with @Transient properties, the coding keys of the stored ones.
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        // The extension role reports what is wrong; this one stays quiet.
        guard let model = try? ModelDeclaration(declaration, attribute: node, diagnose: { _ in }) else {
            return []
        }
        var members: [DeclSyntax] = []
        if !model.transientNames.isEmpty {
            let cases = model.properties.map(\.identifier).joined(separator: ", ")
            members.append("\(raw: model.access)enum CodingKeys: String, CodingKey { case \(raw: cases) }")
        }
        if model.isClass { members.append(DeclSyntax(stringLiteral: initializer(model))) }
        return members
    }

    /// Types every model may store: no check needed.
    private static let storedTypes: Set<String> = [
        "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Double",
        "Float", "Bool", "String", "Date", "UUID", "Data", "URL", "Decimal",
    ]

    private static func needsTypeCheck(_ property: ModelDeclaration.Property) -> Bool {
        !storedTypes.contains(property.type) && property.link == nil
    }

    /// The name of the function that checks a property's type is stored (see ``typeCheck(_:)``).
    private static func typeCheckName(_ property: ModelDeclaration.Property) -> String {
        "lodeStored" + property.name.prefix(1).uppercased() + property.name.dropFirst()
    }

    /// For a property whose type may not be `Codable`: a function the codec passes the type through,
    /// whose overload for other types is unavailable with a message naming the property. The macro
    /// cannot see types; the compiler says it where it finds one that is not stored.
    private static func typeCheck(_ property: ModelDeclaration.Property) -> String {
        let message =
            "@Model stores '\(property.name)' through Codable, and \(property.type) is not Codable: "
            + "make \(property.type) Codable, or mark '\(property.name)' @Transient (not stored)"
        let name = typeCheckName(property)
        return """
                @available(*, unavailable, message: "\(message)")
                private static func \(name)<V>(_ type: V.Type) -> V.Type { type }

                private static func \(name)<V: Codable>(_ type: V.Type) -> V.Type { type }
            """
    }

    /// The type of `property` as the codec passes it: through its check when it has one.
    private static func checkedType(_ property: ModelDeclaration.Property) -> String {
        needsTypeCheck(property)
            ? "Self.\(typeCheckName(property))((\(property.type)).self)" : "(\(property.type)).self"
    }

    private static func schema(_ model: ModelDeclaration) -> String {
        var arguments: [String] = []
        if let name = model.storeName { arguments.append("name: \(name.trimmedDescription)") }
        arguments.append("primaryKey: \\.\(model.primaryKey.identifier)")
        var indexes: [String] = []
        for property in model.properties {
            guard let index = property.index else { continue }
            let name = index.name.map { ", name: \($0.trimmedDescription)" } ?? ""
            indexes.append(".\(index.unique ? "unique" : "on")(\\.\(property.identifier)\(name))")
        }
        for index in model.compoundIndexes {
            let paths = index.keyPaths.map { "\\\($0)" }.joined(separator: ", ")
            let name = index.name.map { ", name: \($0.trimmedDescription)" } ?? ""
            indexes.append(".\(index.unique ? "unique" : "on")(\(paths)\(name))")
        }
        if !indexes.isEmpty { arguments.append("indexes: [\(indexes.joined(separator: ", "))]") }
        var textIndexes: [String] = []
        let searchable = model.properties.filter(\.searchable).map { "\\.\($0.identifier)" }
        if !searchable.isEmpty { textIndexes.append(".on(\(searchable.joined(separator: ", ")))") }
        for index in model.textIndexes {
            let paths = index.keyPaths.map { "\\\($0)" }.joined(separator: ", ")
            let name = index.name.map { ", name: \($0.trimmedDescription)" } ?? ""
            let tokenizer = index.tokenizer.map { ", tokenizer: \($0.trimmedDescription)" } ?? ""
            textIndexes.append(".on(\(paths)\(name)\(tokenizer))")
        }
        if !textIndexes.isEmpty { arguments.append("textIndexes: [\(textIndexes.joined(separator: ", "))]") }
        let links = model.properties.compactMap { property -> String? in
            guard let link = property.link else { return nil }
            let rule = link.rule.map { ", onDelete: \($0.trimmedDescription)" } ?? ""
            return ".\(link.toMany ? "toMany" : "to")(\\.\(property.identifier)\(rule))"
        }
        if !links.isEmpty { arguments.append("links: [\(links.joined(separator: ", "))]") }
        if let version = model.version { arguments.append("version: \(version.trimmedDescription)") }
        let defaults = model.properties.compactMap { property -> String? in
            guard property.hasDefault, let initial = property.initializer, !property.isPrimaryKey else {
                return nil
            }
            return ".field(\\.\(property.identifier), \(initial.trimmedDescription))"
        }
        if !defaults.isEmpty { arguments.append("defaults: [\(defaults.joined(separator: ", "))]") }
        let renames = model.properties.compactMap { property in
            property.originalName.map { "\"\(property.name)\": \"\($0)\"" }
        }
        if !renames.isEmpty { arguments.append("originalNames: [\(renames.joined(separator: ", "))]") }
        return """
                \(model.access)static let schema = Schema<\(model.typeName)>(
                    \(arguments.joined(separator: ",\n        "))
                )
            """
    }

    private static func fieldNames(_ model: ModelDeclaration) -> String {
        let names = model.properties.map { "\"\($0.name)\"" }.joined(separator: ", ")
        let paths = model.properties.map { "\\.\($0.identifier)" }.joined(separator: ", ")
        return """
                \(model.access)static let recordFields = RecordFieldNames([\(names)])

                \(model.access)static var recordKeyPaths: [PartialKeyPath<\(model.typeName)>] { [\(paths)] }
            """
    }

    /// `init(record:)`: reads the fields in any order, each into a local; then sets the properties.
    private static func initializer(_ model: ModelDeclaration) -> String {
        var lines: [String] = []
        for property in model.properties {
            lines.append("var _\(property.name): \(property.type)? = nil")
        }
        // Declared order first (how records are written): each field one name comparison; then any
        // field elsewhere, unknown or repeated, by the loop.
        for (position, property) in model.properties.enumerated() where position < 64 {
            let read = property.isOptional ? "decodeIfPresent" : "decode"
            lines.append(
                "if record.nextFieldIs(\(position)) { _\(property.name) = try record.\(read)(\(checkedType(property))) }"
            )
        }
        lines.append("while let field = try record.nextField() {")
        lines.append("    switch field {")
        for (position, property) in model.properties.enumerated() {
            let read = property.isOptional ? "decodeIfPresent" : "decode"
            lines.append(
                "    case \(position): _\(property.name) = try record.\(read)(\(checkedType(property)))")
        }
        lines.append("    default: try record.skipValue()")
        lines.append("    }")
        lines.append("}")
        for property in model.properties {
            let local = "_\(property.name)"
            if property.isOptional {
                if property.hasDefault, let initial = property.initializer {
                    lines.append(
                        "self.\(property.identifier) = record.hasField(\(fieldIndex(model, property))) ? \(local) : \(initial.trimmedDescription)"
                    )
                } else {
                    lines.append("self.\(property.identifier) = \(local)")
                }
            } else if let initial = property.initializer {
                lines.append("self.\(property.identifier) = \(local) ?? \(initial.trimmedDescription)")
            } else {
                lines.append(
                    "guard let \(local) else { throw RecordDecodingError.missing(\"\(property.name)\") }")
                lines.append("self.\(property.identifier) = \(local)")
            }
        }
        let body = lines.map { "        " + $0 }.joined(separator: "\n")
        return """
                \(model.access)init(record: inout RecordReader) throws {
            \(body)
                }
            """
    }

    private static func fieldIndex(_ model: ModelDeclaration, _ property: ModelDeclaration.Property) -> Int {
        model.properties.firstIndex { $0.name == property.name }!
    }

    /// `decodeRecord(_:names:into:)`: the whole decode compiled where the type is (specialized for
    /// it, the reader inlined), the object initialized in the memory given.
    private static func inPlaceDecoder(_ model: ModelDeclaration) -> String {
        """
            \(model.access)static func decodeRecord(
                _ bytes: UnsafeRawBufferPointer, names: RecordFieldNames, into object: UnsafeMutableRawPointer
            ) throws {
                object.assumingMemoryBound(to: \(model.typeName).self).initialize(
                    to: try \(model.typeName).decodeRecord(bytes, names: names))
            }
        """
    }

    /// `walkRecords(_:)` and `walkField(_:_:)`: the store's loops over records, compiled here for the
    /// type (and, for a field, the field's type).
    private static func walks(_ model: ModelDeclaration) -> String {
        var cases = model.properties.enumerated().map { position, property in
            let read = property.isOptional ? "decodeIfPresent" : "decode"
            return
                "        case \(position): try walk.readField(\(position)) { try $0.\(read)(\(checkedType(property))) }"
        }
        cases.append(
            "        default: preconditionFailure(\"\\(\(model.typeName).self) has no field \\(field)\")")
        return """
                \(model.access)static func walkRecords(_ walk: inout RecordWalk) throws {
                    try walk.decodeRecords(as: \(model.typeName).self)
                }

                \(model.access)static func walkField(_ field: Int, _ walk: inout RecordWalk) throws {
                    switch field {
            \(cases.joined(separator: "\n"))
                    }
                }
            """
    }

    /// `write(record:)`: each field in declared order; a nil optional left out, unless it has a
    /// default: a missing field reads as the default, so its nil is written as null.
    private static func writer(_ model: ModelDeclaration) -> String {
        let lines = model.properties.enumerated().map { position, property in
            let write =
                !property.isOptional ? "encode" : property.hasDefault ? "encodeOrNull" : "encodeIfPresent"
            return "        try record.\(write)(self.\(property.identifier), field: \(position))"
        }
        return """
                \(model.access)func write(record: inout RecordWriter) throws {
            \(lines.joined(separator: "\n"))
                }
            """
    }
}
