import SwiftSyntax
import SwiftSyntaxMacros

/// `@PrimaryKey`, `@Indexed`, `@Unique`, `@Linked`, `@Searchable` and `@Transient`: marks that `@Model` reads on a
/// property. They add nothing themselves.
public struct PropertyMarkerMacro: PeerMacro {
    /// Nothing; an error when the mark is not on a property.
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(VariableDeclSyntax.self) else {
            context.diagnose(
                ModelDiagnostic.error(
                    node,
                    "@\(node.attributeName.trimmedDescription) marks a stored property of a @Model type"))
            return []
        }
        return []
    }
}

/// `#Index<T>(…)`, `#Unique<T>(…)` and `#TextIndex<T>(…)` in a `@Model` type's body: indexes that
/// `@Model` reads.
/// They declare nothing themselves.
public struct SchemaMarkerMacro: DeclarationMacro {
    /// Nothing.
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
