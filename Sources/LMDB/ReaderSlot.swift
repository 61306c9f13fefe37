import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One slot of the reader table.
public struct ReaderSlot: Sendable, Equatable {
    /// The process that holds the slot.
    public var processID: Int32
    /// The thread id LMDB recorded.
    public var thread: UInt64
    /// The snapshot the reader has open, or `nil` for a slot held by a reset (idle) transaction.
    public var transactionID: Int?

    /// True when the process that holds the slot is still running.
    public var processIsAlive: Bool {
        kill(processID, 0) == 0 || errno == EPERM
    }
}
