import LodeCodec

/// A stored record seen without its Swift type, as migrations change it: the CBOR map the app
/// wrote, whose fields are read, set, removed and renamed by name. A path reaches into nested maps
/// with dots (`"address.city"`); the `[String]` forms take the components as they are, for field
/// names that contain a dot.
public struct DynamicRecord: Sendable, Equatable, CustomStringConvertible {
    /// The record, always a map.
    public private(set) var value: CBORValue

    /// A record holding `value`, which must be a map whose keys are text.
    /// - Throws: ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` otherwise.
    public init(_ value: CBORValue) throws {
        guard case .map(let entries) = value,
            entries.allSatisfy({ if case .text = $0.key { true } else { false } })
        else {
            throw LodeError.recordDoesNotDecode(
                type: "", key: "", field: "", reason: "a record is a CBOR map keyed by field names")
        }
        self.value = value
    }

    /// An empty record.
    public init() { value = .map([]) }

    /// The record's top-level field names, in stored order.
    public var fieldNames: [String] {
        guard case .map(let entries) = value else { return [] }
        return entries.compactMap { if case .text(let name) = $0.key { name } else { nil } }
    }

    /// The record as JSON text.
    public var description: String { value.json }

    /// The field at the dotted `path`, or nil; setting nil removes it; setting a path whose parents
    /// are missing makes them (as maps).
    public subscript(path: String) -> CBORValue? {
        get { self[components: Self.components(path)] }
        set { self[components: Self.components(path)] = newValue }
    }

    /// The field at the path `components`, or nil (see ``subscript(_:)``).
    public subscript(components components: [String]) -> CBORValue? {
        get { Self.get(value, components[...]) }
        set { value = Self.set(value, components[...], to: newValue) }
    }

    /// Removes the field at `path` and returns it.
    @discardableResult
    public mutating func remove(_ path: String) -> CBORValue? {
        let removed = self[path]
        self[path] = nil
        return removed
    }

    /// Renames the field at `path` to `newName`, keeping its place among its siblings. Nothing
    /// happens when the field is missing.
    /// - Throws: ``LodeError/invalidTypeDescription(type:reason:)`` when a sibling already has the new
    ///   name.
    public mutating func rename(_ path: String, to newName: String) throws {
        var components = Self.components(path)
        guard let old = components.popLast() else { return }
        let parent = components
        guard case .map(var entries)? = parent.isEmpty ? value : self[components: parent],
            let position = entries.firstIndex(where: { $0.key == .text(old) })
        else { return }
        guard old == newName || !entries.contains(where: { $0.key == .text(newName) }) else {
            throw LodeError.invalidTypeDescription(
                type: "", reason: "cannot rename \(path) to \(newName): the record already has that field")
        }
        entries[position].key = .text(newName)
        if parent.isEmpty { value = .map(entries) } else { self[components: parent] = .map(entries) }
    }

    /// The record's bytes, as it is stored.
    public var bytes: [UInt8] { value.encoded }

    static func components(_ path: String) -> [String] {
        path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    private static func get(_ value: CBORValue, _ components: ArraySlice<String>) -> CBORValue? {
        guard let first = components.first else { return value }
        guard case .map(let entries) = value, let entry = entries.first(where: { $0.key == .text(first) })
        else { return nil }
        return get(entry.value, components.dropFirst())
    }

    private static func set(_ value: CBORValue, _ components: ArraySlice<String>, to newValue: CBORValue?)
        -> CBORValue
    {
        guard let first = components.first else { return newValue ?? value }
        var entries: [CBORValue.MapEntry]
        if case .map(let existing) = value { entries = existing } else { entries = [] }
        let position = entries.firstIndex { $0.key == .text(first) }
        let rest = components.dropFirst()
        if rest.isEmpty {
            if let newValue {
                if let position {
                    entries[position].value = newValue
                } else {
                    entries.append(.init(key: .text(first), value: newValue))
                }
            } else if let position {
                entries.remove(at: position)
            }
            return .map(entries)
        }
        if newValue == nil && position == nil { return .map(entries) }  // nothing to remove
        let child = position.map { entries[$0].value } ?? .map([])
        let updated = set(child, rest, to: newValue)
        if let position {
            entries[position].value = updated
        } else {
            entries.append(.init(key: .text(first), value: updated))
        }
        return .map(entries)
    }
}
