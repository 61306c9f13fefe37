/// One named step in the life of a store's types: it runs once per store, in its place in the list
/// given at open (``Store/init(at:configuration:types:migrations:)``), in one write transaction
/// together with the store's schema version going up by one. Its name is recorded in the store;
/// the list only ever grows at its end.
public struct Migration: Sendable {
    /// The name recorded in the store (unique in the list; never renamed once shipped).
    public let name: String
    let body: @Sendable (MigrationContext) throws -> Void

    /// A migration named `name` that changes the store through `body`.
    public init(_ name: String, _ body: @escaping @Sendable (MigrationContext) throws -> Void) {
        self.name = name
        self.body = body
    }
}
