import Foundation

/// A section of a ``MemoryStorage``: a list of items of any types.
public final class SectionModel: Section {
    private(set) var storedItems: [Any]
    /// One identity per item, so a batch of edits can be turned into exact moves.
    private(set) var tokens: [UInt64]
    let token: UInt64

    /// The items. Assigning replaces them at once (as new items, without an update of their own: the
    /// storage reports them with its next update); use the storage's methods for animated edits.
    public var items: [Any] {
        get { storedItems }
        set {
            storedItems = newValue
            tokens = ItemToken.make(newValue.count)
        }
    }

    /// Makes a section.
    public init(items: [Any] = []) {
        self.storedItems = items
        self.tokens = ItemToken.make(items.count)
        self.token = ItemToken.next()
    }

    /// The item at an index, or nil.
    public func item(at index: Int) -> Any? { storedItems.indices.contains(index) ? storedItems[index] : nil }

    /// The number of items.
    public var numberOfItems: Int { storedItems.count }

    /// The items that are `T` (seeing through type-erased boxes).
    public func items<T>(ofType type: T.Type) -> [T] { storedItems.compactMap { unwrapModel($0) as? T } }

    /// The storage this section is in.
    weak var owner: MemoryStorage?

    /// The section's index in its storage, or nil when it is in none (DTModelStorage's
    /// `currentSectionIndex`).
    public var currentSectionIndex: Int? { owner?.sectionIndex(for: self) }

    // Edits that keep identities.
    func insert(_ item: Any, at index: Int, token: UInt64 = ItemToken.next()) {
        storedItems.insert(item, at: index)
        tokens.insert(token, at: index)
    }

    @discardableResult
    func remove(at index: Int) -> (item: Any, token: UInt64) {
        (storedItems.remove(at: index), tokens.remove(at: index))
    }

    func replace(at index: Int, with item: Any) { storedItems[index] = item }

    func removeAll() {
        storedItems.removeAll()
        tokens.removeAll()
    }
}

/// Process-wide identities for stored items, so a batch of edits can be turned into exact moves.
enum ItemToken {
    private static let counter = TokenCounter()

    static func next() -> UInt64 { counter.next(1) }

    static func make(_ count: Int) -> [UInt64] {
        guard count > 0 else { return [] }
        let first = counter.next(UInt64(count))
        return (0..<UInt64(count)).map { first + $0 }
    }
}

final class TokenCounter: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock` (an NSLock, which ThreadSanitizer sees;
    // `Synchronization.Mutex` waits on a raw futex it cannot).
    private let lock = NSLock()
    private var value: UInt64 = 1

    func next(_ count: UInt64) -> UInt64 {
        lock.withLock {
            defer { value += count }
            return value
        }
    }
}
