import Foundation

extension Array {
    /// The elements sorted by `descriptors` as a brute force would: the first descriptor that tells
    /// two elements apart decides, and elements every descriptor ties on keep their order here (the
    /// oracle the query suites compare sorted results with).
    func sortedStably(by descriptors: [SortDescriptor<Element>]) -> [Element] {
        enumerated().sorted { lhs, rhs in
            for descriptor in descriptors {
                switch descriptor.compare(lhs.element, rhs.element) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }
}
