import Dispatch
import Foundation
import LodeStore

/// The encoded section keys and their values.
final class SectionKeyBox<Key: Sendable>: Sendable {
    private let values = Locked<[[UInt8]: Key]>([:])

    func remember(_ key: Key, for encoded: [UInt8]) { values.withLock { $0[encoded] = key } }
    func value(for encoded: [UInt8]) -> Key? { values.withLock { $0[encoded] } }
}

/// Sections in order with their row counts: turns a flat rank into an index path.
struct SectionLayout {
    let sections: [[UInt8]]
    private let starts: [Int]

    init(sections: [[UInt8]], counts: [[UInt8]: Int]) {
        self.sections = sections
        var starts: [Int] = []
        var total = 0
        for section in sections {
            starts.append(total)
            total += counts[section] ?? 0
        }
        self.starts = starts
    }

    func indexPath(ofRank rank: Int) -> IndexPath {
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= rank { low = middle + 1 } else { high = middle }
        }
        let section = low - 1
        return IndexPath(item: rank - starts[section], section: section)
    }
}
