/// An index of a kind the write path keeps through a seam (a full-text index), as a ``Schema``
/// declares it: what checking the declaration and the stored catalog against it needs. The kind's
/// module adds the schema's public way to declare it, and its write-path side (an
/// `AttachedIndexDefinition`, which every declaration is).
package protocol AttachedIndexDeclaration<Object>: Sendable {
    /// The type whose objects the index covers.
    associatedtype Object
    /// The index's name, unique among the type's attached indexes.
    var name: String { get }
    /// The stored fields the index reads.
    var fields: [String] { get }
    /// The identifier of what splits the fields into the index's entries (a full-text index's
    /// tokenizer), recorded in the catalog: an index stored with other fields or another identifier
    /// was built another way and is built again.
    var builderIdentifier: String { get }
    /// Why a schema declaring the index is refused (a field of a type the kind cannot index), or nil.
    var declarationProblem: String? { get }
}
