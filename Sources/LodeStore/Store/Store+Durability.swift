import LMDB

extension Store {
    /// What a commit guarantees once it returns. Each mode's promise is staged by cutting the power
    /// (docs/POWERCUT.md).
    ///
    /// After a system crash (a power cut, a kernel crash) that interrupted a process writing in one
    /// of the modes that do not sync every commit (``noSync``, ``writeMapAsync``,
    /// ``writeMapNoSync``), the data file may be damaged: the disk wrote its pages in any order. The
    /// next open notices (the process left a marker naming the boot it ran in), checks every page and
    /// then the records against the indexes and the catalog, and refuses a damaged store with
    /// ``StorageFailure/Reason/damaged`` instead of letting LMDB crash on it or read a wrong state.
    public enum Durability: Sendable, Equatable, CaseIterable {
        /// Survives power loss: data and meta page are flushed at every commit.
        case full
        /// A system crash may undo the last commit; the store stays consistent.
        case noMetaSync
        /// Nothing is flushed at commit (the store flushes when it closes): a system crash may lose
        /// the last commits, or leave the store damaged — then the next open refuses it, naming the
        /// damage.
        case noSync
        /// As ``full``, writing through a writable map (fewer copies; every process must use a
        /// write-map mode).
        case writeMap
        /// Asynchronous flushes through a writable map: a system crash may lose recent commits or
        /// leave the store damaged (refused at the next open, as for ``noSync``).
        case writeMapAsync
        /// No flushes through a writable map until the system writes the pages back or the store
        /// closes: as ``noSync``.
        case writeMapNoSync

        package var lmdb: LMDB.Durability {
            switch self {
            case .full: return .full
            case .noMetaSync: return .noMetaSync
            case .noSync: return .noSync
            case .writeMap: return .writeMap
            case .writeMapAsync: return .writeMapAsync
            case .writeMapNoSync: return .writeMapNoSync
            }
        }
    }
}
