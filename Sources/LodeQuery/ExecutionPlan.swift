import Foundation
import LodeCodec
import LodeStore

import struct LMDB.Database

/// The planner's decision: the public ``QueryPlan`` and what to scan.
package struct ExecutionPlan {
    package enum Source {
        case primaryKeys([[UInt8]])
        case records([KeyRange])
        case index(Database, [KeyRange])
        /// The objects a full-text search found: primary keys of existing objects, in the order
        /// the results keep unless sorted.
        case text([[UInt8]])
    }

    package var plan: QueryPlan
    package var source: Source
    /// True when the access path answers every condition exactly (no per-object check needed).
    var covered: Bool
}
