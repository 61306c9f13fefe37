/// How a store moves from one ``VersionedSchema`` to the next, as SwiftData's
/// `SchemaMigrationPlan` declares it: the versions, oldest first, and a stage between each version
/// and the next. Each stage is one ``Migration`` of the store's list, named after its two versions
/// ("1.0.0 → 2.0.0"): it runs once per store, in order, in one write transaction.
///
/// ```swift
/// enum LibraryPlan: SchemaMigrationPlan {
///     static let schemas: [any VersionedSchema.Type] = [LibraryV1.self, LibraryV2.self]
///     static let stages: [MigrationStage] = [.lightweight(fromVersion: LibraryV1.self, toVersion: LibraryV2.self)]
/// }
/// let store = try Store(at: url, schema: LibraryV2.self, migrationPlan: LibraryPlan.self)
/// ```
public protocol SchemaMigrationPlan {
    /// The versions, oldest first; the store is opened with the last.
    static var schemas: [any VersionedSchema.Type] { get }
    /// One stage from each version to the next, in order.
    static var stages: [MigrationStage] { get }
}

/// One step of a ``SchemaMigrationPlan``, from a version to the next.
///
/// Both kinds make the *lightweight* changes the two versions' declarations imply, compared by
/// stored type name: a type the newer version no longer has is deleted; a field the newer type
/// declares renamed (``Schema/originalNames``, `@Attribute(originalName:)`) is renamed; for types
/// with a generated codec (`@Model`), a field the older type stored and the newer one does not is
/// removed. Added fields read their defaults; indexes follow the newer types when they are
/// registered. A custom stage runs `willMigrate` before those changes (on records in the older
/// shape) and `didMigrate` after them (on records in the newer shape: ``MigrationContext/migrate(_:_:)``
/// with a newer type). A store that holds none of the older version's types (a new store) skips
/// the stage's work; the stage is recorded as run.
public struct MigrationStage: @unchecked Sendable {
    // @unchecked: immutable; the metatypes of versions are not marked Sendable.
    /// The version the stage starts from.
    public let fromVersion: any VersionedSchema.Type
    /// The version it brings the store to.
    public let toVersion: any VersionedSchema.Type
    let willMigrate: (@Sendable (MigrationContext) throws -> Void)?
    let didMigrate: (@Sendable (MigrationContext) throws -> Void)?

    /// The changes the two versions' declarations imply, and nothing else.
    public static func lightweight(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type
    ) -> MigrationStage {
        MigrationStage(fromVersion: fromVersion, toVersion: toVersion, willMigrate: nil, didMigrate: nil)
    }

    /// The lightweight changes with work of the app's before and after them.
    public static func custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        willMigrate: (@Sendable (MigrationContext) throws -> Void)?,
        didMigrate: (@Sendable (MigrationContext) throws -> Void)?
    ) -> MigrationStage {
        MigrationStage(
            fromVersion: fromVersion, toVersion: toVersion, willMigrate: willMigrate, didMigrate: didMigrate)
    }

    /// The stage as a migration of the store's list.
    var migration: Migration {
        let stage = self
        return Migration("\(fromVersion.versionIdentifier) → \(toVersion.versionIdentifier)") { context in
            // A store that holds none of the older version's types (a new one) has nothing to move.
            guard try context.holdsAny(of: stage.fromVersion) else { return }
            try stage.willMigrate?(context)
            try context.makeLightweightChanges(from: stage.fromVersion, to: stage.toVersion)
            try stage.didMigrate?(context)
        }
    }
}
