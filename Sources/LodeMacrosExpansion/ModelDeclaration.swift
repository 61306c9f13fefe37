import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// What a `@Model` declaration says, read from its syntax: the type, its stored properties with their
/// marks, and the type-level indexes. Misuse is reported at the node it is about.
struct ModelDeclaration {
    /// A stored property.
    struct Property {
        /// The field's name: the property's name without the backticks it may be written with.
        var name: String
        /// The property's name as code refers to it (`` `default` `` for a keyword).
        var identifier: String
        /// Its access modifier, as ``ModelDeclaration/access`` writes one.
        var access = ""
        /// The name an earlier version stored it under (`@Attribute(originalName:)`).
        var originalName: String?
        /// The type as written (for an optional, the wrapped type).
        var type: String
        var isOptional: Bool
        var initializer: ExprSyntax?
        var isPrimaryKey = false
        /// Whether a record without the field reads as the initial value (an optional's `= nil` is
        /// what a missing field reads as anyway).
        var hasDefault: Bool {
            guard let initializer else { return false }
            return !(isOptional && initializer.is(NilLiteralExprSyntax.self))
        }
        var index: (unique: Bool, name: ExprSyntax?)?
        /// In the type's `@Searchable` full-text index.
        var searchable = false
        /// For a link property: to-many or not, and the delete rule as written.
        var link: (toMany: Bool, rule: ExprSyntax?)?
        var node: Syntax
    }

    /// A compound index from `#Index` / `#Unique`.
    struct CompoundIndex {
        var unique: Bool
        var keyPaths: [String]
        var name: ExprSyntax?
    }

    var typeName: String
    var isClass: Bool
    /// The access modifier the generated members take (`public `, `package `, or nothing).
    var access: String
    var properties: [Property] = []
    var transientNames: [String] = []
    var compoundIndexes: [CompoundIndex] = []
    /// Full-text indexes from `#TextIndex`: key paths, name and tokenizer as written.
    var textIndexes: [(keyPaths: [String], name: ExprSyntax?, tokenizer: ExprSyntax?)] = []
    var storeName: ExprSyntax?
    var version: ExprSyntax?

    var primaryKey: Property { properties.first { $0.isPrimaryKey }! }

    /// Reads `declaration`; reports what is wrong and throws ``ModelRefused`` when anything is.
    init(
        _ declaration: some DeclGroupSyntax, attribute: AttributeSyntax, diagnose: (Diagnostic) -> Void
    ) throws {
        var failed = false
        func report(_ node: some SyntaxProtocol, _ message: String) {
            diagnose(ModelDiagnostic.error(node, message))
            failed = true
        }
        if let structure = declaration.as(StructDeclSyntax.self) {
            typeName = structure.name.text
            isClass = false
            if let generics = structure.genericParameterClause {
                report(generics, "a @Model type cannot be generic: its schema is one value for the type")
            }
        } else if let type = declaration.as(ClassDeclSyntax.self) {
            typeName = type.name.text
            isClass = true
            if !type.modifiers.contains(where: { $0.name.tokenKind == .keyword(.final) }) {
                report(type.classKeyword, "@Model applies to a final class: write `final class \(typeName)`")
            }
            if let generics = type.genericParameterClause {
                report(generics, "a @Model type cannot be generic: its schema is one value for the type")
            }
        } else {
            let kind: String
            let node: Syntax
            if let item = declaration.as(EnumDeclSyntax.self) {
                (kind, node) = ("an enum", Syntax(item.enumKeyword))
            } else if let item = declaration.as(ActorDeclSyntax.self) {
                (kind, node) = ("an actor", Syntax(item.actorKeyword))
            } else if let item = declaration.as(ProtocolDeclSyntax.self) {
                (kind, node) = ("a protocol", Syntax(item.protocolKeyword))
            } else if let item = declaration.as(ExtensionDeclSyntax.self) {
                (kind, node) = ("an extension", Syntax(item.extensionKeyword))
            } else {
                (kind, node) = ("this declaration", Syntax(declaration))
            }
            diagnose(
                ModelDiagnostic.error(node, "@Model applies to a struct or a final class, not to \(kind)"))
            throw ModelRefused()
        }
        access = Self.access(of: declaration.modifiers)
        readArguments(attribute)

        for member in declaration.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                read(variable, report: report)
            } else if let expansion = member.decl.as(MacroExpansionDeclSyntax.self),
                ["Index", "Unique"].contains(expansion.macroName.text)
            {
                readCompoundIndex(expansion, report: report)
            } else if let expansion = member.decl.as(MacroExpansionDeclSyntax.self),
                expansion.macroName.text == "TextIndex"
            {
                readTextIndex(expansion, report: report)
            } else if let nested = member.decl.as(EnumDeclSyntax.self), nested.name.text == "CodingKeys" {
                report(
                    nested.name,
                    "a @Model type's stored fields are its stored properties: mark the ones not to store @Transient instead of declaring CodingKeys"
                )
            } else if let function = member.decl.as(FunctionDeclSyntax.self), Self.isEncode(function) {
                report(
                    function.name,
                    "a @Model type's records are written by its generated codec, which would not call encode(to:): remove it (mark a property @Transient to leave it out), or drop @Model and declare Persistable yourself"
                )
            } else if let initializer = member.decl.as(InitializerDeclSyntax.self), Self.isDecode(initializer)
            {
                report(
                    initializer.initKeyword,
                    "a @Model type's records are read by its generated codec, which would not call init(from:): remove it (an initial value, `var priority: Int = 1`, is what a record without the field reads), or drop @Model and declare Persistable yourself"
                )
            }
        }

        let keys = properties.indices.filter { properties[$0].isPrimaryKey }
        if keys.count > 1 {
            for position in keys.dropFirst() {
                report(
                    properties[position].node,
                    "a @Model type has one primary key; \(properties[keys[0]].name) is already one")
            }
        } else if keys.isEmpty {
            if let position = properties.firstIndex(where: { $0.name == "id" }) {
                properties[position].isPrimaryKey = true
            } else {
                report(
                    attribute,
                    "\(typeName) has no primary key: mark one stored property @PrimaryKey (or name it `id`)")
            }
        }
        for property in properties {
            guard let original = property.originalName else { continue }
            if property.isPrimaryKey {
                report(
                    property.node,
                    "a primary key cannot be renamed by originalName: write a migration that changes the primary key"
                )
            } else if properties.contains(where: { $0.name == original }) {
                report(
                    property.node,
                    "\(property.name)'s originalName \"\(original)\" is another stored property")
            } else if properties.contains(where: { $0.name != property.name && $0.originalName == original })
            {
                report(property.node, "two properties have the originalName \"\(original)\"")
            }
        }
        if let key = properties.first(where: { $0.isPrimaryKey }) {
            if key.isOptional { report(key.node, "a primary key cannot be optional") }
            if key.link != nil { report(key.node, "a primary key cannot be a link") }
        }
        if properties.count > 1000 { report(attribute, "a @Model type stores at most 1000 properties") }
        if failed { throw ModelRefused() }
    }

    /// `@Model(name: "…", version: N)`.
    private mutating func readArguments(_ attribute: AttributeSyntax) {
        guard case .argumentList(let arguments)? = attribute.arguments else { return }
        for argument in arguments {
            switch argument.label?.text {
            case "name": storeName = argument.expression
            case "version": version = argument.expression
            default: break
            }
        }
    }

    private static func access(of modifiers: DeclModifierListSyntax) -> String {
        for modifier in modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }

    private static func attribute(_ name: String, in attributes: AttributeListSyntax) -> AttributeSyntax? {
        for element in attributes {
            if case .attribute(let attribute) = element, attribute.attributeName.trimmedDescription == name {
                return attribute
            }
        }
        return nil
    }

    private static func argument(_ label: String?, of attribute: AttributeSyntax) -> ExprSyntax? {
        guard case .argumentList(let arguments)? = attribute.arguments else { return nil }
        return arguments.first { $0.label?.text == label }?.expression
    }

    private mutating func read(_ variable: VariableDeclSyntax, report: (Syntax, String) -> Void) {
        let modifiers = variable.modifiers.map(\.name.tokenKind)
        if modifiers.contains(.keyword(.static)) || modifiers.contains(.keyword(.class)) { return }
        let attributes = variable.attributes
        let primary = Self.attribute("PrimaryKey", in: attributes)
        let indexed = Self.attribute("Indexed", in: attributes)
        let unique = Self.attribute("Unique", in: attributes)
        let linked = Self.attribute("Linked", in: attributes)
        let transient = Self.attribute("Transient", in: attributes)
        let searchable = Self.attribute("Searchable", in: attributes)
        let attribute = Self.attribute("Attribute", in: attributes)
        let marks: [AttributeSyntax] = [primary, indexed, unique, linked, searchable, attribute].compactMap {
            $0
        }
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        let isLazy = modifiers.contains(.keyword(.lazy))
        let bindings = Array(variable.bindings)
        for (position, binding) in bindings.enumerated() {
            guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                report(Syntax(binding.pattern), "a @Model type's stored properties are named one by one")
                continue
            }
            let identifier = pattern.identifier.text
            let name =
                identifier.hasPrefix("`") && identifier.hasSuffix("`") && identifier.count > 2
                ? String(identifier.dropFirst().dropLast()) : identifier
            if let accessors = binding.accessorBlock, Self.isComputed(accessors) {
                for mark in marks + [transient].compactMap({ $0 }) {
                    report(
                        Syntax(mark),
                        "\(name) is a computed property: only stored properties are stored, indexed or linked"
                    )
                }
                continue
            }
            if let transient {
                if binding.initializer == nil && !isLazy {
                    report(
                        Syntax(transient), "a @Transient property needs an initial value (it is not stored)")
                }
                for mark in marks {
                    report(
                        Syntax(mark), "\(name) is @Transient: it cannot also be \(mark.trimmedDescription)")
                }
                transientNames.append(name)
                continue
            }
            if isLazy {
                report(Syntax(variable), "a lazy property is not stored: mark \(name) @Transient")
                continue
            }
            if isLet && binding.initializer != nil {
                report(
                    Syntax(variable),
                    "\(name) is a constant with an initial value: it would be written but never read back; make it `var`, or mark it @Transient"
                )
                continue
            }
            // `var a, b: Int`: the type written last applies to the names before it.
            let typeSyntax =
                binding.typeAnnotation?.type
                ?? bindings[position...].lazy.compactMap(\.typeAnnotation).first?.type
            let written: String
            if let typeSyntax {
                written = typeSyntax.trimmedDescription
            } else if let initial = binding.initializer?.value, let inferred = Self.literalType(initial) {
                written = inferred
            } else {
                report(
                    Syntax(pattern),
                    "write \(name)'s type (`var \(name): Type = …`): @Model reads each field by its type")
                continue
            }
            var property = Property(
                name: name, identifier: identifier, type: written, isOptional: false,
                initializer: binding.initializer?.value,
                node: Syntax(pattern))
            if let typeSyntax {
                if let wrapped = Self.optionalWrapped(typeSyntax) {
                    property.isOptional = true
                    property.type = wrapped.trimmedDescription
                } else if typeSyntax.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
                    report(Syntax(typeSyntax), "write \(name)'s type as an optional (`?`), not `!`")
                    continue
                }
            }
            property.isPrimaryKey = primary != nil
            property.access = Self.access(of: variable.modifiers)
            var attributeUnique = false
            if let attribute {
                (attributeUnique, property.originalName) = readAttribute(attribute, of: name, report: report)
            }
            if let indexed { property.index = (false, Self.argument("name", of: indexed)) }
            if let unique { property.index = (true, Self.argument("name", of: unique)) }
            if attributeUnique {
                if property.index != nil {
                    report(Syntax(attribute!), "\(name) is indexed already: remove .unique or the other mark")
                }
                property.index = (true, nil)
            }
            if let indexed, unique != nil {
                report(Syntax(indexed), "\(name) is @Unique, which is an index already: remove @Indexed")
            }
            let linkKind = Self.linkKind(property)
            if let linkKind {
                property.link = (linkKind, linked.flatMap { Self.argument("onDelete", of: $0) })
            } else if let linked {
                report(
                    Syntax(linked),
                    "@Linked marks a link property: `Link<Target>?` (to-one) or `[Link<Target>]` (to-many), not \(written)"
                )
            }
            if property.link != nil, property.index != nil {
                report(property.node, "a link is indexed by its target already: remove @Indexed/@Unique")
            }
            if let searchable {
                let type = property.type.filter { $0 != " " }
                if type == "String" || type == "[String]" {
                    property.searchable = true
                } else {
                    report(
                        Syntax(searchable),
                        "@Searchable marks text: String, String?, [String] or [String]?, not \(written)")
                }
            }
            properties.append(property)
        }
    }

    /// `@Attribute(.unique, originalName: "old")`: whether it asks for a unique index, and the
    /// earlier name.
    private func readAttribute(
        _ attribute: AttributeSyntax, of name: String, report: (Syntax, String) -> Void
    ) -> (unique: Bool, originalName: String?) {
        var unique = false
        var originalName: String?
        guard case .argumentList(let arguments)? = attribute.arguments else { return (false, nil) }
        for argument in arguments {
            if argument.label?.text == "originalName" {
                guard let literal = argument.expression.as(StringLiteralExprSyntax.self),
                    let text = literal.representedLiteralValue, !text.isEmpty, !text.contains(".")
                else {
                    report(
                        Syntax(argument.expression),
                        "originalName is the earlier field's name as a string literal (\"title\")")
                    continue
                }
                if text == name {
                    report(Syntax(argument.expression), "\(name)'s originalName is its own name")
                    continue
                }
                originalName = text
            } else if argument.label == nil,
                argument.expression.as(MemberAccessExprSyntax.self)?.declName.baseName.text == "unique"
            {
                unique = true
            } else {
                report(
                    Syntax(argument),
                    "@Attribute takes .unique and originalName: \"…\" (SwiftData's other options have no meaning here)"
                )
            }
        }
        return (unique, originalName)
    }

    /// `func encode(to encoder: …)`: a hand-written `Encodable` conformance.
    private static func isEncode(_ function: FunctionDeclSyntax) -> Bool {
        let parameters = function.signature.parameterClause.parameters
        return function.name.text == "encode" && parameters.count == 1
            && parameters.first?.firstName.text == "to"
    }

    /// `init(from decoder: …)`: a hand-written `Decodable` conformance.
    private static func isDecode(_ initializer: InitializerDeclSyntax) -> Bool {
        let parameters = initializer.signature.parameterClause.parameters
        return parameters.count == 1 && parameters.first?.firstName.text == "from"
    }

    private static func isComputed(_ accessors: AccessorBlockSyntax) -> Bool {
        switch accessors.accessors {
        case .getter: return true
        case .accessors(let list):
            // Observers alone (willSet/didSet) keep a property stored.
            return list.contains {
                ![.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind)
            }
        @unknown default: return true
        }
    }

    private static func optionalWrapped(_ type: TypeSyntax) -> TypeSyntax? {
        if let optional = type.as(OptionalTypeSyntax.self) { return optional.wrappedType }
        if let named = type.as(IdentifierTypeSyntax.self), named.name.text == "Optional",
            let argument = named.genericArgumentClause?.arguments.first,
            case .type(let wrapped) = argument.argument
        {
            return wrapped
        }
        return nil
    }

    /// nil, or whether a link property is to-many: `Link<T>?` is to-one, `[Link<T>]` to-many.
    private static func linkKind(_ property: Property) -> Bool? {
        let type = property.type.filter { $0 != " " }
        if property.isOptional, type.hasPrefix("Link<") { return false }
        if !property.isOptional, type.hasPrefix("[Link<"), type.hasSuffix(">]") { return true }
        return nil
    }

    /// The type of a literal initial value, for a property written without one.
    private static func literalType(_ expression: ExprSyntax) -> String? {
        if expression.is(IntegerLiteralExprSyntax.self) { return "Int" }
        if expression.is(FloatLiteralExprSyntax.self) { return "Double" }
        if expression.is(BooleanLiteralExprSyntax.self) { return "Bool" }
        if expression.is(StringLiteralExprSyntax.self) { return "String" }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-" {
            return literalType(prefix.expression)
        }
        return nil
    }

    private mutating func readTextIndex(
        _ expansion: MacroExpansionDeclSyntax, report: (Syntax, String) -> Void
    ) {
        var keyPaths: [String] = []
        var name: ExprSyntax?
        var tokenizer: ExprSyntax?
        for argument in expansion.arguments {
            if argument.label?.text == "name" {
                name = argument.expression
            } else if argument.label?.text == "tokenizer" {
                tokenizer = argument.expression
            } else if let keyPath = argument.expression.as(KeyPathExprSyntax.self) {
                keyPaths.append(keyPath.components.trimmedDescription)
            } else {
                report(Syntax(argument), "#TextIndex takes key paths (`\\.field`), a name and a tokenizer")
            }
        }
        if keyPaths.isEmpty {
            report(Syntax(expansion), "#TextIndex takes at least one key path")
            return
        }
        textIndexes.append((keyPaths, name, tokenizer))
    }

    private mutating func readCompoundIndex(
        _ expansion: MacroExpansionDeclSyntax, report: (Syntax, String) -> Void
    ) {
        let macro = "#\(expansion.macroName.text)"
        let unique = expansion.macroName.text == "Unique"
        if expansion.arguments.contains(where: { $0.expression.is(ArrayExprSyntax.self) }) {
            // SwiftData's form: each list of key paths is an index (`#Index<T>([\.a], [\.b, \.c])`).
            for argument in expansion.arguments {
                guard let list = argument.expression.as(ArrayExprSyntax.self), argument.label == nil else {
                    report(
                        Syntax(argument),
                        "\(macro) takes key paths (`\\.a, \\.b`) or lists of them, one list for each index (`[\\.a], [\\.b, \\.c]`), not both"
                    )
                    return
                }
                var keyPaths: [String] = []
                for element in list.elements {
                    guard let keyPath = element.expression.as(KeyPathExprSyntax.self) else {
                        report(Syntax(element), "\(macro)'s lists hold key paths (`\\.field`)")
                        return
                    }
                    keyPaths.append(keyPath.components.trimmedDescription)
                }
                guard (1...3).contains(keyPaths.count) else {
                    report(
                        Syntax(list), "an index of \(macro) takes one to 3 key paths, not \(keyPaths.count)")
                    continue
                }
                compoundIndexes.append(CompoundIndex(unique: unique, keyPaths: keyPaths, name: nil))
            }
            return
        }
        var keyPaths: [String] = []
        var name: ExprSyntax?
        for argument in expansion.arguments {
            if argument.label?.text == "name" {
                name = argument.expression
            } else if let keyPath = argument.expression.as(KeyPathExprSyntax.self) {
                keyPaths.append(keyPath.components.trimmedDescription)
            } else {
                report(Syntax(argument), "#\(expansion.macroName.text) takes key paths (`\\.field`)")
            }
        }
        if keyPaths.isEmpty || keyPaths.count > 3 {
            report(Syntax(expansion), "\(macro) takes one to 3 key paths, not \(keyPaths.count)")
            return
        }
        compoundIndexes.append(CompoundIndex(unique: unique, keyPaths: keyPaths, name: name))
    }
}
