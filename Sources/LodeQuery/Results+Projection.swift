import Foundation
import LodeCodec
import LodeStore

// MARK: Projections

extension Results {
    /// The value of one property of every object, in order, read straight from each record: the field
    /// is found in the stored bytes and decoded alone, without building the objects.
    ///
    /// Reach for it when a list, a chart or an aggregate needs one or two fields of many objects
    /// (titles, dates, amounts): it reads the same records as ``fetch()`` but decodes a fraction of
    /// each. The property must be a stored top-level property whose field has the property's name
    /// (as synthesized `Codable` writes it); for anything else (a computed or nested property, a
    /// renamed coding key, a record written before a field with a default existed) each object is
    /// decoded and the key path read, so the result is always what `fetch().map { $0[keyPath:] }`
    /// gives.
    ///
    /// - Complexity: the first read evaluates the query by its plan (see ``explain()``) and keeps the
    ///   evaluation; then O(*n*) field decodes for *n* objects (one whole decode first, to check that
    ///   the field holds the property).
    /// - Throws: what evaluating the results throws, and
    ///   ``LodeError/recordDoesNotDecode(type:key:field:reason:)`` for a record that does not decode (a
    ///   field that does not decode alone is read through its object).
    public func values<V: Decodable & Equatable>(of keyPath: KeyPath<Element, V>) throws -> [V] {
        let name = fieldName(of: keyPath)
        var fromRecord: ((UnsafeRawBufferPointer, UnsafeMutablePointer<V>) throws -> Bool)?
        var walker: ((ObjectCollector<V>) -> RecordWalker?)?
        if let codec = Element.schema.recordCodec, let field = codec.field(of: keyPath) {
            // A walk of every record: the loop compiled for the model and the field's type; a record
            // without the field is read whole.
            walker = { values in
                let reader = ObjectReader<Element>()
                return Element.schema.fieldWalker(field: field, into: values) { key, record in
                    values.append(try reader.read(record, key: key)[keyPath: keyPath])
                }
            }
            // A generated model: the property's field, read alone by the type's own reader.
            let place = RecordReader.valuePlacer(V.self)
            let fields = codec.fields
            fromRecord = { record, value in
                var reader = try RecordReader(record, names: fields)
                guard try reader.seek(field: field) else { return false }
                try place(&reader, value)
                return true
            }
        }
        return try project(
            names: [name], fromObject: { $0[keyPath: keyPath] },
            fromFields: { reader, found in try reader.value(V.self, named: name, found) }, same: ==,
            fromRecord: fromRecord, walker: walker)
    }

    /// The values of two properties of every object, in order, read straight from each record (see
    /// ``values(of:)``).
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func values<A: Decodable & Equatable, B: Decodable & Equatable>(
        of first: KeyPath<Element, A>, _ second: KeyPath<Element, B>
    ) throws -> [(A, B)] {
        let (firstName, secondName) = (fieldName(of: first), fieldName(of: second))
        var fromRecord: ((UnsafeRawBufferPointer, UnsafeMutablePointer<(A, B)>) throws -> Bool)?
        if let codec = Element.schema.recordCodec, let firstField = codec.field(of: first),
            let secondField = codec.field(of: second), firstField != secondField
        {
            // A generated model: both fields read alone, in the order the record holds them.
            let (readA, readB) = (RecordReader.valueReader(A.self), RecordReader.valueReader(B.self))
            fromRecord = { record, pair in
                var reader = try RecordReader(record, names: codec.fields)
                if firstField < secondField {
                    guard try reader.seek(field: firstField) else { return false }
                    let a = try readA(&reader)
                    guard try reader.seek(field: secondField) else { return false }
                    pair.initialize(to: (a, try readB(&reader)))
                    return true
                }
                guard try reader.seek(field: secondField) else { return false }
                let b = try readB(&reader)
                guard try reader.seek(field: firstField) else { return false }
                pair.initialize(to: (try readA(&reader), b))
                return true
            }
        }
        return try project(
            names: [firstName, secondName], fromObject: { ($0[keyPath: first], $0[keyPath: second]) },
            fromFields: { reader, found in
                guard let a = try reader.value(A.self, named: firstName),
                    let b = try reader.value(B.self, named: secondName)
                else { return false }
                try found((a, b))
                return true
            }, same: { $0.0 == $1.0 && $0.1 == $1.1 }, fromRecord: fromRecord)
    }

    /// The projection `P` of each object of the results, in order: read from the record's fields by
    /// `fromFields` (which hands it over, or returns false when the record lacks a field) where they
    /// stand for the properties, else from the decoded object by `fromObject`. Fields stand for the
    /// properties when every name is a top-level field name and, on the first record, what they hold
    /// equals (`same`) what the object's properties hold.
    ///
    /// The values go into an ``ObjectCollector``, not an array appended to per object: in
    /// unspecialized generic code each append would look up the array's metadata.
    ///
    /// For a type with a generated codec, `fromRecord` reads the projection from the record into its
    /// place among the values (false, the place left uninitialized, when the record lacks a field: the
    /// object, with its defaults, decides); the fields are the properties, so nothing is compared. A
    /// record it cannot read is decoded whole, so the error is the object's. `walker`, when given,
    /// makes the walk of every record compiled for the model that collects into the values given.
    private func project<P>(
        names: [String], fromObject: @escaping (Element) -> P,
        fromFields: (borrowing CBORFieldReader, (P) throws -> Void) throws -> Bool,
        same: @escaping (P, P) -> Bool,
        fromRecord: ((UnsafeRawBufferPointer, UnsafeMutablePointer<P>) throws -> Bool)? = nil,
        walker: ((ObjectCollector<P>) -> RecordWalker?)? = nil
    ) throws -> [P] {
        let fieldsMayStand = names.allSatisfy { !$0.isEmpty && !$0.contains(".") }
        // The walk's flags sit behind a pointer: captured `var`s would be boxed, and every access to
        // a box pays a dynamic exclusivity check, per record.
        let state = UnsafeMutablePointer<ProjectionState>.allocate(capacity: 1)
        state.initialize(to: ProjectionState(direct: fieldsMayStand))
        defer { state.deallocate() }
        var direct: Bool {
            get { state.pointee.direct }
            set { state.pointee.direct = newValue }
        }
        var checked: Bool {
            get { state.pointee.checked }
            set { state.pointee.checked = newValue }
        }
        let values = ObjectCollector<P>()
        let append = values.append
        /// The generated codec's path, apart from `consider`: no generic key per record.
        func readField(
            _ transaction: Transaction, key: some Collection<UInt8>, record: UnsafeRawBufferPointer
        )
            throws
        {
            let place = values.nextPlace()
            let read: Bool
            do {
                read = try fromRecord!(record, place)
            } catch {
                // Not dropped: the whole decode below throws the record's error, naming its key.
                read = false
            }
            if read { return values.didInitializeNextPlace() }
            append(fromObject(try transaction.decode(Element.self, from: record, key: key)))
        }
        func consider(_ transaction: Transaction, key: some Collection<UInt8>, record: UnsafeRawBufferPointer)
            throws
        {
            if fromRecord != nil { return try readField(transaction, key: key, record: record) }
            guard direct else {
                return append(fromObject(try transaction.decode(Element.self, from: record, key: key)))
            }
            var complete = false
            do {
                complete = try CBORDecoder().withFields(of: record) { reader in
                    try fromFields(reader) { value in
                        if checked {
                            append(value)
                        } else {
                            // The first record decides whether fields stand for the properties.
                            checked = true
                            let object = fromObject(
                                try transaction.decode(Element.self, from: record, key: key))
                            direct = same(value, object)
                            append(object)
                        }
                    }
                }
            } catch is DecodingError {
                // A field that does not decode as the property's type alone (an `init(from:)` may
                // read older forms): the whole object decides, and its decoding error, if any, is
                // the one thrown.
                complete = false
            }
            if !complete {
                if !checked {
                    checked = true
                    direct = false
                }
                append(fromObject(try transaction.decode(Element.self, from: record, key: key)))
            }
        }
        // A walk of the records in key order projects them as it finds them; else a second walk.
        let visit: RecordVisitor =
            fromRecord != nil
            ? { transaction, key, record in try readField(transaction, key: key, record: record) }
            : { transaction, key, record in try consider(transaction, key: key, record: record) }
        let (evaluation, visited) = try evaluation(
            visiting: visit, expecting: { values.reserve($0) }, walking: walker?(values))
        if !visited {
            // What a walk that was not kept projected (another reader's evaluation won) is dropped.
            values.removeAll()
            direct = fieldsMayStand
            checked = false
            if let objects = evaluation.objects { return objects.map(fromObject) }
            let ascending = evaluation.plan.ordering == .primaryKey(reversed: false)
            try read(at: evaluation) { transaction in
                try transaction.forEachRecord(of: Element.self, keys: evaluation.keys, ascending: ascending) {
                    try consider(transaction, key: $0, record: $1)
                }
            }
        }
        return values.take()
    }
}

// MARK: Aggregates over projections

extension Results {
    /// The smallest value of a stored property among the results, read through ``values(of:)``
    /// (the field alone is decoded from each record).
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func min<Value: Comparable & Decodable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try values(of: keyPath).min()
    }

    /// The largest value of a stored property among the results, read through ``values(of:)``.
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func max<Value: Comparable & Decodable>(of keyPath: KeyPath<Element, Value>) throws -> Value? {
        try values(of: keyPath).max()
    }

    /// The sum of a stored numeric property over the results, read through ``values(of:)``.
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func sum<Value: AdditiveArithmetic & Decodable>(of keyPath: KeyPath<Element, Value>) throws
        -> Value
    {
        try values(of: keyPath).reduce(.zero, +)
    }

    /// The mean of a stored integer property over the results, or nil when there are none, read
    /// through ``values(of:)``.
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func average<Value: BinaryInteger & Decodable>(of keyPath: KeyPath<Element, Value>) throws
        -> Double?
    {
        let values = try values(of: keyPath)
        return values.isEmpty ? nil : values.reduce(0.0) { $0 + Double($1) } / Double(values.count)
    }

    /// The mean of a stored floating-point property over the results, or nil when there are none,
    /// read through ``values(of:)``.
    ///
    /// - Complexity: as ``values(of:)``.
    /// - Throws: as ``values(of:)``.
    public func average<Value: BinaryFloatingPoint & Decodable>(of keyPath: KeyPath<Element, Value>) throws
        -> Double?
    {
        let values = try values(of: keyPath)
        return values.isEmpty ? nil : values.reduce(0.0) { $0 + Double($1) } / Double(values.count)
    }
}

/// What a projection's walk keeps track of (see `Results.project`).
struct ProjectionState {
    /// Whether fields stand for the properties, and whether the first record decided it.
    var direct: Bool
    var checked = false
}
