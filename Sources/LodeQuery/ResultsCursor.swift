import Foundation
import LodeCodec
import LodeStore
import Synchronization

import struct LMDB.Database
import enum LMDB.LockWatch
import class LMDB.ReadSnapshot

/// Reads the objects of ``Results`` in order, a batch at a time, on the results' version — GRDB's
/// cursors are the model: `while let object = try cursor.next() { … }`. A record that does not decode
/// throws from `next()`; the cursor can go on with the objects after it.
public struct ResultsCursor<Element: Persistable>: @unchecked Sendable {
    // @unchecked: as ``Results``, an immutable query and an evaluated, immutable key list.
    private let results: Results<Element>
    private let evaluation: Evaluation<Element>
    private var batch: [Element] = []
    private var batchPosition = 0
    /// Up to this position objects are read one at a time (a batch of them did not decode).
    private var singleUntil = 0
    /// The position of the next object.
    public private(set) var position = 0
    /// How many objects one read decodes.
    static var batchSize: Int { 256 }

    init(results: Results<Element>, evaluation: Evaluation<Element>) {
        self.results = results
        self.evaluation = evaluation
    }

    /// How many objects the cursor reads in all.
    public var count: Int { evaluation.keys.count }

    /// The next object, or nil after the last one.
    /// - Throws: the error reading it (``LodeError/recordDoesNotDecode(type:key:field:reason:)``, a
    ///   storage failure); the cursor then stands after that object.
    public mutating func next() throws -> Element? {
        guard position < evaluation.keys.count else { return nil }
        if batchPosition >= batch.count, position >= singleUntil {
            let end = Swift.min(position + Self.batchSize, evaluation.keys.count)
            batchPosition = 0
            do {
                batch = try results.objects(in: position..<end, of: evaluation)
            } catch {
                // A record of the batch does not decode: read these one at a time, so the error is
                // that record's own and the others can still be read.
                batch = []
                singleUntil = end
            }
        }
        defer { position += 1 }
        if batchPosition < batch.count {
            defer { batchPosition += 1 }
            return batch[batchPosition]
        }
        return try results.object(at: position)
    }
}
