import CLibPQ

/// The rows of one statement, read as text.
package final class PostgresResult {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }

    deinit { PQclear(result) }

    /// How many rows it has.
    package var rowCount: Int { Int(PQntuples(result)) }

    /// How many rows the statement changed (`INSERT`, `UPDATE`, `DELETE`), 0 when it says nothing.
    package var changedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    /// The value at `row` and `column` as text, nil for SQL NULL.
    package func text(_ row: Int, _ column: Int) -> String? {
        guard PQgetisnull(result, Int32(row), Int32(column)) == 0 else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// The value at `row` and `column` as a 64-bit integer, nil for NULL or text that is not one.
    package func integer(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    /// The value at `row` and `column` as a Boolean (`t` or `f`), nil for NULL.
    package func bool(_ row: Int, _ column: Int) -> Bool? { text(row, column).map { $0 == "t" } }

    /// The bytes of the value at `row` and `column` (its text form), without copying into a `String`.
    package func withBytes<R>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> R)
        rethrows
        -> R?
    {
        guard PQgetisnull(result, Int32(row), Int32(column)) == 0 else { return nil }
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        return try body(
            UnsafeRawBufferPointer(start: PQgetvalue(result, Int32(row), Int32(column)), count: length))
    }

    /// The value at `row` and `column` of a binary result as an integer (`int2`, `int4`, `int8`,
    /// big-endian), nil for NULL.
    package func binaryInteger(_ row: Int, _ column: Int) -> Int64? {
        withBytes(row, column) { bytes -> Int64? in
            var value: Int64 = 0
            guard [1, 2, 4, 8].contains(bytes.count) else { return nil }
            for byte in bytes { value = value << 8 | Int64(byte) }
            // Sign-extend the shorter forms.
            let shift = 64 - bytes.count * 8
            return shift == 0 ? value : (value << shift) >> shift
        } ?? nil
    }
}
