import Foundation
import LodeStore

extension Store {
    /// Runs `body` in a write transaction whose commit the observations of `tokens` do not deliver:
    /// for edits the app's list already shows (a row the user just moved or deleted). The
    /// observations advance past the commit silently; if one was behind or another commit came
    /// right after, it receives the combined change as usual.
    ///
    /// - Throws: ``LodeError/readOnly(path:)`` in a read-only store, ``LodeError/storeClosed(path:)`` after
    ///   the store closed and ``LodeError/storage(_:)`` when LMDB fails (a full disk included),
    ///   ``LodeError/storage(_:)`` too for a write begun on a thread already inside a write of the store
    ///   (rather than a deadlock), and whatever `body` throws (then nothing is written).
    @discardableResult
    @available(*, noasync, message: "a write transaction must not cross an await; use the async overload")
    public func write<R>(withoutNotifying tokens: [ObservationToken], _ body: (WriteTransaction) throws -> R)
        throws -> R
    {
        var version: Int?
        do {
            return try write { tx in
                version = tx.version
                for token in tokens { token.silence(version: tx.version) }
                return try body(tx)
            }
        } catch {
            if let version { for token in tokens { token.unsilence(version: version) } }
            throw error
        }
    }

}
