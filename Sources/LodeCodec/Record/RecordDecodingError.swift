import Foundation

/// Why a record did not decode through a type's generated code: the field (a path such as
/// `tags[2]` or `address.city`) and the reason.
public struct RecordDecodingError: Error, CustomStringConvertible, Sendable {
    /// The field the error is in, as a path from the record (empty for the record itself).
    public var field: String
    /// What is wrong, in words.
    public var reason: String

    /// An error in `field`.
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    /// The error with `outer` in front of its path (`outer.field`, or `outer[3]` for an element).
    @usableFromInline func inside(_ outer: String) -> RecordDecodingError {
        var error = self
        if field.isEmpty {
            error.field = outer
        } else if field.hasPrefix("[") {
            error.field = outer + field
        } else {
            error.field = outer + "." + field
        }
        return error
    }

    /// A required field the record lacks.
    public static func missing(_ field: String) -> RecordDecodingError {
        RecordDecodingError(field: field, reason: "the record has no field \"\(field)\"")
    }

    /// `error` as a record error: a `DecodingError` from a nested `Codable` value keeps its coding path.
    @usableFromInline package static func from(_ error: any Error) -> RecordDecodingError {
        if let error = error as? RecordDecodingError { return error }
        if let error = error as? DecodingError {
            return RecordDecodingError(field: error.fieldPath, reason: error.reason)
        }
        return RecordDecodingError(field: "", reason: "\(error)")
    }

    /// `field: reason`.
    public var description: String { field.isEmpty ? reason : "\(field): \(reason)" }
}

extension DecodingError {
    /// The coding path as `field.sub[2].leaf`.
    package var fieldPath: String {
        let path: [any CodingKey]
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        var text = ""
        for key in path {
            if let index = key.intValue, key.stringValue.hasPrefix("[") || key.stringValue == "Index \(index)"
            {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }

    /// The error's description, without the path.
    package var reason: String {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.debugDescription
        @unknown default:
            return "\(self)"
        }
    }
}
