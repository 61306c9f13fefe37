import Foundation
import LodeStore

import struct LMDB.Database
import class LMDB.Environment
import struct LMDB.EnvironmentOptions
import struct LMDB.LMDBError
import struct LMDB.PageCheck

/// What `Store/checkPages(maxProblems:)` found.
public struct PageReport: Sendable, Equatable {
    /// Each problem: the page, the database whose tree holds it, and what is wrong.
    public var problems: [String]
    /// True when more problems were found than kept.
    public var truncated: Bool
    /// The version checked.
    public var version: Int
    /// Pages read in the trees (branch, leaf and overflow pages).
    public var pagesInUse: Int
    /// Pages on the free list.
    public var freePages: Int
    /// Named databases and entries seen.
    public var databases: Int, entries: Int

    /// True when nothing was found.
    public var isClean: Bool { problems.isEmpty }

    init(_ check: PageCheck) {
        problems = check.problems.map(\.description)
        truncated = check.truncated
        version = check.version
        pagesInUse = check.pagesInUse
        freePages = check.freePages
        databases = check.databases
        entries = check.entries
    }
}
