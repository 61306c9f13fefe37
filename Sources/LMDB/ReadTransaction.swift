import CLMDB
import Foundation

/// A read-only snapshot of the environment. See ``Environment/read(_:)``.
public final class ReadTransaction: Transaction {}
