/// What happens to objects that link to an object being deleted, per link (like SQL's
/// `ON DELETE`): the rule of `Task.project` says what deleting a project does to its tasks.
public enum DeleteRule: String, Sendable, Codable, CaseIterable {
    /// The link is removed: a to-one link becomes nil, a to-many link loses the target.
    case nullify
    /// The linking object is deleted too (and what links to it, by its own rules, transitively).
    case cascade
    /// The delete fails with ``LodeError/deleteDenied(type:key:linkedFrom:)`` while any object
    /// links to the target.
    case deny
}
