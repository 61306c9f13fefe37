/// An error thrown by app code Lode ran (see ``LodeError/appCodeFailed(_:)``), kept as thrown.
public struct AppCodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The error as the app's code threw it.
    public let error: any Error

    /// Wraps `error`.
    public init(_ error: any Error) { self.error = error }

    /// The error's own description.
    public var description: String { "\(error)" }

    /// Equal when both errors read the same (errors are not `Equatable` in general).
    public static func == (lhs: AppCodeError, rhs: AppCodeError) -> Bool {
        String(reflecting: lhs.error) == String(reflecting: rhs.error)
    }
}
