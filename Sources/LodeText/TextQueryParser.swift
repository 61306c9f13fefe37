import LodeCodec
import LodeStore

import struct LMDB.Database

/// Reads the syntax of ``TextQuery`` (see there), one token of lookahead.
struct TextQueryParser {
    private enum Token: Equatable {
        case word(String, prefix: Bool)
        case phrase(String, prefix: Bool)
        case open, close, or, and, minus
    }

    private let query: String
    private var tokens: [(token: Token, position: Int)] = []
    private var next = 0
    /// Groups may nest this deep (a deeper one is refused rather than recursed into).
    static let maximumDepth = 64

    init(_ query: String) { self.query = query }

    mutating func parse() throws(TextQueryError) -> TextQuery.Expression {
        tokens = try lex()
        guard !tokens.isEmpty else { throw error(at: 0, "the query is empty") }
        let expression = try parseAll(depth: 0)
        if next < tokens.count {
            // parseAll stops only at the end or at a `)`.
            throw error(at: tokens[next].position, "\")\" closes no group")
        }
        return expression
    }

    private func error(at position: Int, _ reason: String) -> TextQueryError {
        TextQueryError(query: query, position: position, reason: reason)
    }

    // MARK: Tokens

    private func lex() throws(TextQueryError) -> [(token: Token, position: Int)] {
        let characters = Array(query)
        var tokens: [(token: Token, position: Int)] = []
        var index = 0
        func isBoundary(_ character: Character) -> Bool {
            character.isWhitespace || character == "(" || character == ")" || character == "\""
        }
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character.isWhitespace {
                index += 1
                continue
            }
            switch character {
            case "(":
                tokens.append((.open, start))
                index += 1
            case ")":
                tokens.append((.close, start))
                index += 1
            case "\"":
                guard let end = characters[(index + 1)...].firstIndex(of: "\"") else {
                    throw error(at: start, "the quote is not closed")
                }
                let text = String(characters[(index + 1)..<end])
                index = end + 1
                var prefix = false
                if index < characters.count && characters[index] == "*" {
                    prefix = true
                    index += 1
                }
                if index < characters.count && !isBoundary(characters[index]) {
                    throw error(at: index, "a phrase must be followed by a space, a parenthesis or the end")
                }
                tokens.append((.phrase(text, prefix: prefix), start))
            case "-":
                guard index + 1 < characters.count, !characters[index + 1].isWhitespace else {
                    throw error(at: start, "\"-\" must be followed by the word, phrase or group it excludes")
                }
                tokens.append((.minus, start))
                index += 1
            case "*":
                throw error(at: start, "\"*\" must end a word")
            default:
                var end = index
                while end < characters.count && !isBoundary(characters[end]) && characters[end] != "*" {
                    end += 1
                }
                let text = String(characters[index..<end])
                index = end
                var prefix = false
                if index < characters.count && characters[index] == "*" {
                    prefix = true
                    index += 1
                    if index < characters.count && !isBoundary(characters[index]) {
                        throw error(at: index - 1, "\"*\" must end a word")
                    }
                }
                if !prefix && text == "OR" {
                    tokens.append((.or, start))
                } else if !prefix && text == "AND" {
                    tokens.append((.and, start))
                } else {
                    tokens.append((.word(text, prefix: prefix), start))
                }
            }
        }
        return tokens
    }

    // MARK: Grammar

    private var current: (token: Token, position: Int)? { next < tokens.count ? tokens[next] : nil }

    /// Parts side by side (or joined by `AND`) up to the end or a `)`.
    private mutating func parseAll(depth: Int) throws(TextQueryError) -> TextQuery.Expression {
        var parts: [(expression: TextQuery.Expression, position: Int)] = []
        while let (token, position) = current, token != .close {
            if token == .and {
                guard !parts.isEmpty else { throw error(at: position, "AND needs a word before it") }
                next += 1
                guard let following = current, following.token != .close, following.token != .or,
                    following.token != .and
                else {
                    throw error(at: position, "AND needs a word after it")
                }
                continue
            }
            parts.append((try parseAny(depth: depth), position))
        }
        guard let first = parts.first else {
            throw error(at: current?.position ?? 0, "the query is empty")
        }
        if parts.allSatisfy({ Self.isExclusion($0.expression) }) {
            throw error(at: first.position, "every part is excluded: a query needs a word to search for")
        }
        return parts.count == 1 ? first.expression : .all(parts.map(\.expression))
    }

    private static func isExclusion(_ expression: TextQuery.Expression) -> Bool {
        if case .not = expression { return true }
        return false
    }

    /// Alternatives joined by `OR`.
    private mutating func parseAny(depth: Int) throws(TextQueryError) -> TextQuery.Expression {
        let firstPosition = current?.position ?? 0
        var alternatives = [try parseUnary(depth: depth)]
        var positions = [firstPosition]
        while let (token, position) = current, token == .or {
            next += 1
            guard let following = current, following.token != .close, following.token != .or,
                following.token != .and
            else {
                throw error(at: position, "OR needs a word after it")
            }
            positions.append(following.position)
            alternatives.append(try parseUnary(depth: depth))
        }
        if alternatives.count > 1,
            let excluded = alternatives.indices.first(where: { Self.isExclusion(alternatives[$0]) })
        {
            throw error(at: positions[excluded], "an exclusion cannot be one of the alternatives of OR")
        }
        return alternatives.count == 1 ? alternatives[0] : .any(alternatives)
    }

    private mutating func parseUnary(depth: Int) throws(TextQueryError) -> TextQuery.Expression {
        guard let (token, position) = current else { throw error(at: query.count, "a word is missing") }
        guard token == .minus else { return try parsePrimary(depth: depth) }
        next += 1
        if let following = current, following.token == .minus {
            throw error(at: following.position, "an exclusion cannot be excluded")
        }
        guard current != nil else { throw error(at: position, "\"-\" must be followed by what it excludes") }
        return .not(try parsePrimary(depth: depth))
    }

    private mutating func parsePrimary(depth: Int) throws(TextQueryError) -> TextQuery.Expression {
        guard let (token, position) = current else { throw error(at: query.count, "a word is missing") }
        switch token {
        case .word(let text, let prefix):
            next += 1
            return prefix ? .prefix(text) : .word(text)
        case .phrase(let text, let prefix):
            next += 1
            guard text.contains(where: { !$0.isWhitespace }) else {
                throw error(at: position, "the phrase is empty")
            }
            return prefix ? .prefix(text) : .phrase(text)
        case .open:
            guard depth < Self.maximumDepth else {
                throw error(at: position, "groups are nested more than \(Self.maximumDepth) deep")
            }
            next += 1
            if let following = current, following.token == .close {
                throw error(at: position, "the parentheses are empty")
            }
            let inner = try parseAll(depth: depth + 1)
            guard let closing = current, closing.token == .close else {
                throw error(at: position, "\"(\" is not closed")
            }
            next += 1
            return inner
        case .close: throw error(at: position, "\")\" closes no group")
        case .or: throw error(at: position, "OR needs a word before it")
        case .and: throw error(at: position, "AND needs a word before it")
        case .minus: throw error(at: position, "an exclusion cannot be excluded")
        }
    }
}
