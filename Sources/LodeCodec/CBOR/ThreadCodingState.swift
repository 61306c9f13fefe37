import Foundation

/// A coder's state that a thread keeps for reuse, decode after decode (or encode after encode).
protocol ThreadCodingState: AnyObject {
    /// Lets go of the containers the state keeps for reuse: they hold the state itself, which would
    /// otherwise never be freed.
    func dropCachedContainers()
}

/// A `pthread` key for a thread's ``ThreadCodingState``, stored retained: when the thread ends, the
/// state lets go of its cached containers and is released.
func makeThreadStateKey() -> pthread_key_t {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        guard let raw else { return }
        let state = Unmanaged<AnyObject>.fromOpaque(raw)
        (state.takeUnretainedValue() as? any ThreadCodingState)?.dropCachedContainers()
        state.release()
    }
    precondition(status == 0, "pthread_key_create failed: \(status)")
    return key
}
