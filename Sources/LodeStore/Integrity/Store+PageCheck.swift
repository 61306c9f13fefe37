import Foundation
import LMDB

extension Store {
    /// Throws ``StorageFailure/Reason/damaged`` naming the first problem when the pages are not sound.
    static func refuseDamagedPages(_ environment: Environment) throws {
        let report = try mapStorageErrors { try environment.checkPages(maxProblems: 10) }
        guard let first = report.problems.first else { return }
        let more = report.problems.count - 1
        throw LodeError.storage(
            StorageFailure(
                reason: .damaged, operation: "check pages of \(environment.path)/data.mdb",
                message: "\(first)"
                    + (more > 0 ? " (and \(more)\(report.truncated ? "+" : "") more problems)" : "")))
    }
}
