import Foundation
import LodeCodec

extension Store {
    /// Opens (or creates) the store at `url` with the models of `schema`, moving it there through
    /// `migrationPlan`'s stages it has not run yet (each a ``Migration`` of the store's list).
    ///
    /// - Throws: ``LodeError/migrationFailed(name:reason:)`` when the plan is not a chain (its
    ///   last version must be `schema`, and each stage must go from a version to the next), and what
    ///   ``init(at:configuration:types:migrations:)`` throws.
    public convenience init(
        at url: URL, configuration: StoreConfiguration = StoreConfiguration(),
        schema: any VersionedSchema.Type, migrationPlan: (any SchemaMigrationPlan.Type)? = nil
    ) throws {
        var migrations: [Migration] = []
        if let plan = migrationPlan {
            try Self.checkChain(plan, ending: schema)
            migrations = plan.stages.map(\.migration)
        }
        try self.init(at: url, configuration: configuration, types: schema.models, migrations: migrations)
    }

    private static func checkChain(
        _ plan: any SchemaMigrationPlan.Type, ending schema: any VersionedSchema.Type
    )
        throws
    {
        func refuse(_ reason: String) -> LodeError {
            .migrationFailed(name: "the migration plan \(plan)", reason: reason)
        }
        let versions = plan.schemas.map { ObjectIdentifier($0) }
        guard let last = plan.schemas.last, ObjectIdentifier(last) == ObjectIdentifier(schema) else {
            throw refuse("its last schema must be \(schema), the one the store is opened with")
        }
        guard plan.stages.count == versions.count - 1 else {
            throw refuse(
                "\(versions.count) schemas need \(versions.count - 1) stages, not \(plan.stages.count)")
        }
        for (position, stage) in plan.stages.enumerated() {
            guard ObjectIdentifier(stage.fromVersion) == versions[position],
                ObjectIdentifier(stage.toVersion) == versions[position + 1]
            else {
                throw refuse(
                    "stage \(position + 1) goes from \(stage.fromVersion) to \(stage.toVersion), not from "
                        + "\(plan.schemas[position]) to \(plan.schemas[position + 1])")
            }
        }
        let identifiers = plan.schemas.map { $0.versionIdentifier }
        guard zip(identifiers, identifiers.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw refuse("its versions must rise: \(identifiers.map(\.description).joined(separator: ", "))")
        }
    }
}

extension MigrationContext {
    /// The changes the declarations of two schema versions imply (see ``MigrationStage``).
    func makeLightweightChanges(from old: any VersionedSchema.Type, to new: any VersionedSchema.Type) throws {
        let stored = Set(try typeNames())
        func declarations(_ version: any VersionedSchema.Type) -> [String: Declaration] {
            Dictionary(
                version.models.map(Self.declaration(of:)).map { ($0.name, $0) },
                uniquingKeysWith: { a, _ in a })
        }
        let (before, after) = (declarations(old), declarations(new))
        for name in before.keys.sorted() where after[name] == nil && stored.contains(name) {
            try deleteType(name)
        }
        for (name, declaration) in after.sorted(by: { $0.key < $1.key }) where stored.contains(name) {
            let renamedFrom = Set(declaration.originalNames.values)
            for (field, original) in declaration.originalNames.sorted(by: { $0.key < $1.key }) {
                try renameDeclaredField(original, to: field, in: name)
            }
            // Fields the older type stored and the newer does not: known only for generated codecs.
            guard let oldFields = before[name]?.fields, let newFields = declaration.fields else { continue }
            for field in oldFields where !newFields.contains(field) && !renamedFrom.contains(field) {
                try removeField(field, from: name)
            }
        }
    }

    /// Whether the store holds any of `version`'s types.
    func holdsAny(of version: any VersionedSchema.Type) throws -> Bool {
        let stored = Set(try typeNames())
        return version.models.contains { stored.contains(Self.declaration(of: $0).name) }
    }

    /// What a stored type's declaration says: its name, its renames, its fields (when it has a
    /// generated codec).
    typealias Declaration = (name: String, originalNames: [String: String], fields: [String]?)

    private static func declaration(of type: any Persistable.Type) -> Declaration {
        func read<T: Persistable>(_ type: T.Type) -> (String, [String: String], [String]?) {
            (T.schema.typeName, T.schema.originalNames, T.schema.storage.recordFields?.names)
        }
        return read(type)
    }
}
