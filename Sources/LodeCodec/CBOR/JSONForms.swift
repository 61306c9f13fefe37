import Foundation

/// Whether the decodes on this thread accept the forms JSON gives values that CBOR tags: a `Date` as
/// a plain number of seconds since 1970, `Data` as Base64 text, a `Decimal` as a floating-point number.
/// Sync's download turns a row's JSON into CBOR without the app's type, decodes the type from it with
/// these forms accepted, and stores the type's own encoding. Checked only where the tagged form is
/// missing, so other decodes pay nothing.
package enum JSONForms {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// True inside ``accepting(_:)`` on this thread.
    package static var areAccepted: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` with the JSON forms accepted on this thread.
    package static func accepting<R>(_ body: () throws -> R) rethrows -> R {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }

    /// The bytes of Base64 `text`, or nil.
    package static func base64(_ text: String) -> Data? { Data(base64Encoded: text) }
}
