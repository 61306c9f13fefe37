import Foundation

/// Objects collected one at a time by the store's unspecialized generic code, in memory of their own:
/// appending to an `Array` of a generic element there looks up the array type's metadata for every
/// element, which costs more than decoding a small object. Public for the loops the model macro
/// compiles into a model's module (``RecordWalking``), which place what they read here.
public final class ObjectCollector<T> {
    /// Where the objects are and how many: behind a pointer, read and written without the dynamic
    /// exclusivity check per access a class's stored properties cost (`@exclusivity(unchecked)` is
    /// not seen by code inlined into another module). The collector is used by one walk at a time.
    @usableFromInline
    struct State {
        @usableFromInline var base: UnsafeMutablePointer<T>
        @usableFromInline var capacity: Int
        @usableFromInline var collected: Int
    }

    @usableFromInline let state: UnsafeMutablePointer<State>

    private var base: UnsafeMutablePointer<T> {
        get { state.pointee.base }
        set { state.pointee.base = newValue }
    }
    private var capacity: Int {
        get { state.pointee.capacity }
        set { state.pointee.capacity = newValue }
    }
    private var collected: Int {
        get { state.pointee.collected }
        set { state.pointee.collected = newValue }
    }

    /// How many objects were collected.
    public var count: Int { state.pointee.collected }

    /// An empty collector with room for `capacity` objects before it grows.
    package init(capacity: Int = 16) {
        let capacity = Swift.max(capacity, 1)
        state = .allocate(capacity: 1)
        state.initialize(to: State(base: .allocate(capacity: capacity), capacity: capacity, collected: 0))
    }

    deinit {
        base.deinitialize(count: collected)
        base.deallocate()
        state.deallocate()
    }

    /// Adds `object` after the others.
    package func append(_ object: consuming T) {
        if collected == capacity { grow() }
        (base + collected).initialize(to: object)
        collected += 1
    }

    /// The uninitialized memory of the object after those collected, to initialize there; it is
    /// collected when ``didInitializeNextPlace()`` says so (until then it is not, and a later call
    /// gives the same place).
    @inlinable @inline(__always)
    public func nextPlace() -> UnsafeMutablePointer<T> {
        if state.pointee.collected == state.pointee.capacity { grow() }
        return state.pointee.base + state.pointee.collected
    }

    /// Collects the object initialized at ``nextPlace()``.
    @inlinable @inline(__always)
    public func didInitializeNextPlace() {
        precondition(state.pointee.collected < state.pointee.capacity, "no place was given")
        state.pointee.collected &+= 1
    }

    /// Makes room for `more` objects after those collected.
    package func reserve(_ more: Int) {
        if collected + more > capacity { resize(collected + more) }
    }

    @usableFromInline
    func grow() { resize(capacity * 2) }

    private func resize(_ newCapacity: Int) {
        let larger = UnsafeMutablePointer<T>.allocate(capacity: newCapacity)
        larger.moveInitialize(from: base, count: collected)
        base.deallocate()
        base = larger
        capacity = newCapacity
    }

    /// The object collected at `index`.
    package subscript(index: Int) -> T {
        precondition(index >= 0 && index < collected, "index \(index) out of 0..<\(collected)")
        return base[index]
    }

    /// Drops the last object collected.
    package func removeLast() {
        precondition(collected > 0, "no object to remove")
        collected -= 1
        (base + collected).deinitialize(count: 1)
    }

    /// Drops the objects collected.
    package func removeAll() {
        base.deinitialize(count: collected)
        collected = 0
    }

    /// The objects collected, in order; the collector is empty after.
    package func take() -> [T] {
        guard collected > 0 else { return [] }
        let objects = [T](unsafeUninitializedCapacity: collected) { buffer, initialized in
            buffer.baseAddress!.moveInitialize(from: base, count: collected)
            initialized = collected
        }
        collected = 0
        return objects
    }
}
