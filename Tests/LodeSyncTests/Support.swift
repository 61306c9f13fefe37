import LodeStore

@testable import LodeTestModels

/// The suites' task type (not Swift's `Task`, which the tests name `_Concurrency.Task`).
typealias Task = LodeTestModels.Task
/// Lode's transactions (the suites import LMDB too, which has its own).
typealias Transaction = LodeStore.Transaction
/// Lode's write transactions.
typealias WriteTransaction = LodeStore.WriteTransaction
