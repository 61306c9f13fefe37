/// One version of an app's models, as SwiftData's `VersionedSchema` declares it: a namespace type
/// holding the version's models (nested `@Model` types, or any ``Persistable`` types) and naming
/// them, with a version number. A ``SchemaMigrationPlan`` lists the versions in order and the
/// stages between them; ``Store/init(at:configuration:schema:migrationPlan:)`` opens a store with
/// the latest.
///
/// ```swift
/// enum LibraryV1: VersionedSchema {
///     static let versionIdentifier = SchemaVersion(1, 0, 0)
///     static let models: [any Persistable.Type] = [Book.self]
///     @Model struct Book { var id: Int; var name: String }
/// }
/// ```
public protocol VersionedSchema {
    /// The version (recorded in the store as part of each stage's name).
    static var versionIdentifier: SchemaVersion { get }
    /// The version's stored types.
    static var models: [any Persistable.Type] { get }
}

/// A version number of a ``VersionedSchema``: major, minor and patch, compared in that order.
public struct SchemaVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The major version.
    public let major: Int
    /// The minor version.
    public let minor: Int
    /// The patch version.
    public let patch: Int

    /// The version `major.minor.patch`.
    public init(_ major: Int, _ minor: Int, _ patch: Int) {
        (self.major, self.minor, self.patch) = (major, minor, patch)
    }

    /// `major.minor.patch`.
    public var description: String { "\(major).\(minor).\(patch)" }

    /// Whether `a` comes before `b`.
    public static func < (a: SchemaVersion, b: SchemaVersion) -> Bool {
        (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
    }
}
