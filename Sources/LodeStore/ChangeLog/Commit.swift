import Foundation
import LMDB
import LodeCodec

/// One commit as the change log records it: its version, when it was made, and the net change of
/// each object it touched — readable without the app's Swift types (`lode-dump changes` and `watch`
/// print these).
public struct Commit: Sendable, Equatable {
    /// The version the commit made (its LMDB transaction id).
    public var version: Int
    /// When it was made.
    public var time: Date
    /// The net change of each object, in the order first touched.
    public var changes: [ObjectChange]
}
