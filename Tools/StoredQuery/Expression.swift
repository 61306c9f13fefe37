import Foundation
import Lode
import LodeInspection

/// Why a `--where` expression was refused: what is wrong and where in the text.
package struct ExpressionError: Error, CustomStringConvertible, Sendable {
    /// The message, starting with `--where:`.
    package var description: String

    /// An error saying `description`.
    package init(description: String) { self.description = description }
}

/// A `--where` expression over a record's fields (`lode-dump dump`, `watch` and Lode Studio's tables).
package indirect enum WhereExpression: Sendable {
    /// `field op value`, `op` one of `== != < <= > >=`.
    case comparison(field: String, op: String, value: CBORValue)
    /// `field in [values]`.
    case membership(field: String, values: [CBORValue])
    /// `field hasPrefix "text"`.
    case prefixed(field: String, text: String)
    /// `field contains "text"`.
    case containing(field: String, text: String)
    /// Every one holds (a chain of `and`, kept flat: evaluating 8,000 conjuncts must not recurse 8,000
    /// deep).
    case all([WhereExpression])
    /// At least one holds (a chain of `or`, flat).
    case any([WhereExpression])
    /// `not` of an expression.
    case not(WhereExpression)

    /// True when `record` satisfies the expression. A missing field is null.
    package func matches(_ record: CBORValue) -> Bool {
        switch self {
        case .comparison(let name, let op, let value):
            let actual = record.value(atPath: name) ?? .null
            if case .null = value {
                let isNull = actual == .null
                return op == "==" ? isNull : op == "!=" ? !isNull : false
            }
            guard Self.comparable(actual, value) else { return op == "!=" }
            let order = compare(actual, value)
            switch op {
            case "==": return order == 0
            case "!=": return order != 0
            case "<": return order < 0
            case "<=": return order <= 0
            case ">": return order > 0
            default: return order >= 0
            }
        case .membership(let name, let values):
            let actual = record.value(atPath: name) ?? .null
            return values.contains { Self.comparable(actual, $0) && compare(actual, $0) == 0 }
        case .prefixed(let name, let text):
            guard case .text(let actual)? = record.value(atPath: name) else { return false }
            return actual.hasPrefix(text)
        case .containing(let name, let text):
            guard case .text(let actual)? = record.value(atPath: name) else { return false }
            return actual.contains(text)
        case .all(let terms): return terms.allSatisfy { $0.matches(record) }
        case .any(let terms): return terms.contains { $0.matches(record) }
        case .not(let inner): return !inner.matches(record)
        }
    }

    /// Values of one kind: both numbers, both text, both Booleans, or both null.
    package static func comparable(_ lhs: CBORValue, _ rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.text, .text), (.bool, .bool), (.null, .null): return true
        default: return lhs.number != nil && rhs.number != nil
        }
    }

    // MARK: Parsing

    enum Token: Equatable {
        case word(String)
        case number(Double, String)
        case text(String)
        case symbol(String)
    }

    /// Parses `source`; a malformed expression is a usage error naming the offending position.
    package static func parse(_ source: String) throws(ExpressionError) -> WhereExpression {
        do {
            return try parseUnchecked(source)
        } catch let error as ExpressionError {
            throw error
        } catch {
            throw ExpressionError(description: "--where: \(error)")
        }
    }

    private static func parseUnchecked(_ source: String) throws -> WhereExpression {
        var parser = Parser(tokens: try tokenize(source), source: source)
        let expression = try parser.parseOr()
        guard parser.position == parser.tokens.count else {
            throw ExpressionError(
                description:
                    "--where: unexpected \(parser.describe(parser.tokens[parser.position])) in \"\(source)\"")
        }
        return expression
    }

    static func tokenize(_ source: String) throws -> [Token] {
        var tokens: [Token] = []
        let characters = Array(source)
        var index = 0
        func fail(_ what: String) -> ExpressionError {
            ExpressionError(description: "--where: \(what) at character \(index + 1) of \"\(source)\"")
        }
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace {
                index += 1
            } else if character == "\"" {
                var text = ""
                index += 1
                while true {
                    guard index < characters.count else { throw fail("unterminated text") }
                    let next = characters[index]
                    index += 1
                    if next == "\"" { break }
                    if next == "\\" {
                        guard index < characters.count else { throw fail("unterminated text") }
                        text.append(characters[index])
                        index += 1
                    } else {
                        text.append(next)
                    }
                }
                tokens.append(.text(text))
            } else if character.isNumber
                || (character == "-" && index + 1 < characters.count && characters[index + 1].isNumber)
            {
                var text = String(character)
                index += 1
                while index < characters.count,
                    characters[index].isNumber || characters[index] == "." || characters[index] == "e"
                {
                    text.append(characters[index])
                    index += 1
                }
                guard let value = Double(text) else { throw fail("malformed number \(text)") }
                tokens.append(.number(value, text))
            } else if character.isLetter || character == "_" {
                var text = ""
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
                        || characters[index] == "."
                {
                    text.append(characters[index])
                    index += 1
                }
                tokens.append(.word(text))
            } else {
                let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["==", "!=", "<=", ">="].contains(two) {
                    tokens.append(.symbol(two))
                    index += 2
                } else if "<>()[],".contains(character) {
                    tokens.append(.symbol(String(character)))
                    index += 1
                } else {
                    throw fail("unexpected \"\(character)\"")
                }
            }
        }
        return tokens
    }

    struct Parser {
        let tokens: [Token]
        let source: String
        var position = 0

        func describe(_ token: Token) -> String {
            switch token {
            case .word(let word): return "\"\(word)\""
            case .number(_, let text): return text
            case .text(let text): return "\"\\\"\(text)\\\"\""
            case .symbol(let symbol): return "\"\(symbol)\""
            }
        }

        func fail(_ expected: String) -> ExpressionError {
            let found = position < tokens.count ? describe(tokens[position]) : "the end"
            return ExpressionError(
                description: "--where: expected \(expected), found \(found) in \"\(source)\"")
        }

        mutating func next() -> Token? {
            guard position < tokens.count else { return nil }
            defer { position += 1 }
            return tokens[position]
        }

        mutating func accept(_ token: Token) -> Bool {
            guard position < tokens.count, tokens[position] == token else { return false }
            position += 1
            return true
        }

        /// How deep parentheses and `not`s may nest: the parser and the evaluator recurse once per
        /// level, so a hostile expression must not reach the stack's end.
        static let maximumDepth = 100
        var depth = 0

        mutating func parseOr() throws -> WhereExpression {
            var terms = [try parseAnd()]
            while accept(.word("or")) { terms.append(try parseAnd()) }
            return terms.count == 1 ? terms[0] : .any(terms)
        }

        mutating func parseAnd() throws -> WhereExpression {
            var terms = [try parseNot()]
            while accept(.word("and")) { terms.append(try parseNot()) }
            return terms.count == 1 ? terms[0] : .all(terms)
        }

        /// Enters one more level of nesting, or refuses the expression.
        mutating func nest() throws {
            depth += 1
            guard depth <= Self.maximumDepth else {
                throw ExpressionError(
                    description:
                        "--where: parentheses and `not` nest deeper than \(Self.maximumDepth) levels in the expression"
                )
            }
        }

        mutating func parseNot() throws -> WhereExpression {
            if accept(.word("not")) {
                try nest()
                defer { depth -= 1 }
                return .not(try parseNot())
            }
            if accept(.symbol("(")) {
                try nest()
                defer { depth -= 1 }
                let inner = try parseOr()
                guard accept(.symbol(")")) else { throw fail("\")\"") }
                return inner
            }
            guard case .word(let field)? = next(), !["and", "or", "not", "in"].contains(field) else {
                position -= position > 0 ? 1 : 0
                throw fail("a field name")
            }
            guard let token = next() else {
                throw fail("an operator (== != < <= > >= in hasPrefix contains) after \(field)")
            }
            switch token {
            case .symbol(let op) where ["==", "!=", "<", "<=", ">", ">="].contains(op):
                return .comparison(field: field, op: op, value: try parseValue())
            case .word("in"):
                guard accept(.symbol("[")) else { throw fail("\"[\"") }
                var values: [CBORValue] = []
                if !accept(.symbol("]")) {
                    repeat { values.append(try parseValue()) } while accept(.symbol(","))
                    guard accept(.symbol("]")) else { throw fail("\"]\"") }
                }
                return .membership(field: field, values: values)
            case .word("hasPrefix"), .word("contains"):
                guard case .text(let text)? = next() else {
                    position -= 1
                    throw fail("text in quotes")
                }
                return token == .word("hasPrefix")
                    ? .prefixed(field: field, text: text) : .containing(field: field, text: text)
            default:
                position -= 1
                throw fail("an operator (== != < <= > >= in hasPrefix contains) after \(field)")
            }
        }

        mutating func parseValue() throws -> CBORValue {
            let start = position
            switch next() {
            case .number(let value, let text)?:
                if let integer = Int64(text) {
                    return integer < 0 ? .negative(UInt64(-1 - integer)) : .unsigned(UInt64(integer))
                }
                return .float(value)
            case .text(let text)?: return .text(text)
            case .word("true")?: return .bool(true)
            case .word("false")?: return .bool(false)
            case .word("null")?: return .null
            default:
                position = start
                throw fail("a value (number, \"text\", true, false or null)")
            }
        }
    }
}

/// Orders two field values: missing and null first, then numbers, text, others by their JSON.
package func compare(_ lhs: CBORValue?, _ rhs: CBORValue?) -> Int {
    func rank(_ value: CBORValue?) -> Int {
        switch value {
        case nil, .null?: return 0
        case .bool?: return 1
        case .unsigned?, .negative?, .float?: return 2
        case .text?: return 3
        default: return 4
        }
    }
    let (left, right) = (rank(lhs), rank(rhs))
    if left != right { return left < right ? -1 : 1 }
    if left == 0 { return 0 }  // a missing field is null
    switch (lhs, rhs) {
    case (.text(let a)?, .text(let b)?): return a == b ? 0 : (a < b ? -1 : 1)
    case (.bool(let a)?, .bool(let b)?): return a == b ? 0 : (!a ? -1 : 1)
    default:
        if let a = lhs?.number, let b = rhs?.number {
            return a == b ? 0 : (a < b ? -1 : 1)
        }
        let (a, b) = (lhs?.json ?? "", rhs?.json ?? "")
        return a == b ? 0 : (a < b ? -1 : 1)
    }
}
