import Dispatch
import Foundation
import LodeLive
import LodeQuery
import LodeStore

extension LiveResultsStorage {
    // MARK: Sections

    /// Adds a section showing `results` (of any type), at the end. With `keyPaths`, only changes to
    /// those fields count as modifications (joining, leaving and moving always count).
    /// `sectionIdentifier` names the section in ``snapshot()``.
    ///
    /// - Throws: as ``LiveResults/init(_:keyPaths:linkedKeyPaths:)`` (``LodeError/liveQueryUnsupported(type:reason:)`` for
    ///   results of a transaction, and what evaluating them throws), and
    ///   ``LodeError/insideTransaction(operation:)`` inside a transaction; the storage is left as it was.
    public func addSection<Element: Persistable>(
        with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members.append(member) }
    }

    /// Inserts a section showing `results` before the member at `memberIndex` (each plain results is one
    /// member; sectioned results are one member of many sections).
    ///
    /// - Throws: as ``addSection(with:keyPaths:sectionIdentifier:)``, and
    ///   ``MemberError/noSuchMember(index:count:)`` for an index outside the members.
    public func insertSection<Element: Persistable>(
        with results: Results<Element>, at memberIndex: Int, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try insert(member, at: memberIndex)
    }

    /// Removes the member at `memberIndex` and its sections.
    ///
    /// - Throws: ``MemberError/noSuchMember(index:count:)`` for an index outside the members,
    ///   ``LodeError/insideTransaction(operation:)`` inside a transaction, and what advancing the
    ///   other members to the same version throws (``LodeError/storeClosed(path:)`` after the store closed
    ///   and ``LodeError/storage(_:)`` when LMDB fails,
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a stored record that no longer
    ///   decodes); the storage is left as it was.
    public func removeSection(at memberIndex: Int) throws {
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.remove(at: memberIndex)
        }
    }

    /// Replaces the member at `memberIndex` by a section showing `results`, in one update.
    ///
    /// - Throws: as ``addSection(with:keyPaths:sectionIdentifier:)``, and
    ///   ``MemberError/noSuchMember(index:count:)`` for an index outside the members.
    public func replaceSection<Element: Persistable>(
        at memberIndex: Int, with results: Results<Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: SectionIdentifier? = nil
    ) throws {
        let member = try Self.member(results, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in
            guard members.indices.contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members[memberIndex] = member
        }
    }

    /// Shows `sectioned` as the storage's only member: its sections, their keys as header models.
    /// `sectionIdentifier` names each section in ``snapshot()`` from its key.
    ///
    /// - Throws: as ``LiveSectionedResults/init(_:keyPaths:linkedKeyPaths:)``, and
    ///   ``LodeError/insideTransaction(operation:)`` inside a transaction; the storage is left as it was.
    public func setSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members = [member] }
    }

    /// Adds sectioned results after the current members.
    ///
    /// - Throws: as ``setSections(from:keyPaths:sectionIdentifier:)``.
    public func addSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]? = nil,
        sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try change { members in members.append(member) }
    }

    /// Inserts sectioned results before the member at `memberIndex`.
    ///
    /// - Throws: as ``setSections(from:keyPaths:sectionIdentifier:)``, and
    ///   ``MemberError/noSuchMember(index:count:)`` for an index outside the members.
    public func insertSections<Key, Element>(
        from sectioned: SectionedResults<Key, Element>, at memberIndex: Int,
        keyPaths: [PartialKeyPath<Element>]? = nil, sectionIdentifier: ((Key) -> SectionIdentifier)? = nil
    ) throws {
        let member = try Self.member(sectioned, keyPaths: keyPaths, identifier: sectionIdentifier)
        try insert(member, at: memberIndex)
    }

    /// Inserts `member` before the member at `memberIndex` (or at the end), in one update.
    private func insert(_ member: Member, at memberIndex: Int) throws {
        try change { members in
            guard (0...members.count).contains(memberIndex) else {
                throw LiveResultsStorage.MemberError.noSuchMember(index: memberIndex, count: members.count)
            }
            members.insert(member, at: memberIndex)
        }
    }

    static func member<Element>(
        _ results: Results<Element>, keyPaths: [PartialKeyPath<Element>]?, identifier: SectionIdentifier?
    ) throws -> Member {
        let live = try LiveResults(results, keyPaths: keyPaths)
        let name = identifier ?? SectionIdentifier(DefaultSectionName(text: Element.schema.typeName))
        return try Member(live: live) { try view(of: live.results, identifier: name) }
    }

    static func member<Key, Element>(
        _ sectioned: SectionedResults<Key, Element>, keyPaths: [PartialKeyPath<Element>]?,
        identifier: ((Key) -> SectionIdentifier)?
    ) throws -> Member {
        let live = try LiveSectionedResults(sectioned, keyPaths: keyPaths)
        let name =
            identifier ?? { key in
                SectionIdentifier(DefaultSectionName(text: "\(Element.schema.typeName).\(key)"))
            }
        return try Member(live: live) { try view(of: live.sections, identifier: name) }
    }

    static func view<Element>(of results: Results<Element>, identifier: SectionIdentifier) throws -> View {
        let count = try results.count
        return View(
            sectionCount: 1, count: { _ in count },
            item: { path in (0..<count).contains(path.item) ? try results.object(at: path.item) : nil },
            objectID: { path in try results.objectID(at: path.item) }, header: { _ in nil },
            identifier: { _ in identifier })
    }

    static func view<Key, Element>(
        of sectioned: SectionedResults<Key, Element>, identifier: @escaping (Key) -> SectionIdentifier
    ) throws -> View {
        let sections = try sectioned.sections
        return View(
            sectionCount: sections.count, count: { sections[$0].count },
            item: { path in
                sections.indices.contains(path.section)
                    && (0..<sections[path.section].count).contains(path.item)
                    ? try sections[path.section][path.item] : nil
            },
            objectID: { path in
                sections.indices.contains(path.section)
                    ? try sections[path.section].objects.objectID(at: path.item) : nil
            },
            header: { sections[$0].key }, identifier: { identifier(sections[$0].key) })
    }
}
