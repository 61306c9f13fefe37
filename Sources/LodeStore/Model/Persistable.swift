/// A type Lode can store: any `Codable` value with a ``Schema`` that names its primary key and
/// indexes.
///
/// ```swift
/// struct Todo: Persistable {
///     var id: UUID
///     var title: String
///     var status: Status
///     static let schema = Schema<Todo>(primaryKey: \.id, indexes: [.on(\.status), .unique(\.title)])
/// }
/// ```
public protocol Persistable: Codable, SendableMetatype {
    /// The primary key, the indexes and the name this type is stored under.
    static var schema: Schema<Self> { get }
}

extension Persistable {
    /// The name this type is stored under.
    public static var storeName: String { schema.typeName }
}
