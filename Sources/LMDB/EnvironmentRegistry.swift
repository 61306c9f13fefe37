/// The process-wide table of open environments, keyed by the directory's device and inode, so a
/// directory is opened at most once per process whatever path names it.
final class EnvironmentRegistry: @unchecked Sendable {
    // @unchecked: the table of environments is only touched under `lock`.
    struct Key: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    private final class WeakEntry {
        weak var environment: Environment?
        init(_ environment: Environment) { self.environment = environment }
    }

    static let shared = EnvironmentRegistry()
    private let lock = Lock()
    private var entries: [Key: WeakEntry] = [:]

    /// The open environment for `key`, or a new one from `make`. While an environment is closing
    /// (its last reference gone, its deinit not yet done) a new open waits for the close to finish: a
    /// second handle on the same files must never overlap the first.
    func environment(
        for key: Key, options: EnvironmentOptions, path: String, make: () throws -> Environment
    ) throws -> Environment {
        lock.lock()
        defer { lock.unlock() }
        while let entry = entries[key] {
            if let open = entry.environment {
                if open.options.readOnly && !options.readOnly {
                    throw LMDBError(
                        .incompatibleOptions, operation: "open \(path)",
                        message: "\(path) is already open read-only in this process")
                }
                return open
            }
            lock.wait()
        }
        let environment = try make()
        entries[key] = WeakEntry(environment)
        return environment
    }

    /// True when the environment of `key` is open (or closing) in this process.
    func isOpen(_ key: Key) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return entries[key] != nil
    }

    /// Runs `close` and removes the entry, under the registry lock.
    func close(key: Key, _ close: () -> Void) {
        lock.lock()
        close()
        entries[key] = nil
        lock.broadcast()
        lock.unlock()
    }
}
