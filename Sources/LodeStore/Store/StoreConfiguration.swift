import LMDB

/// How a ``Store`` is opened.
public struct StoreConfiguration: Sendable, Equatable {
    /// What a commit guarantees once it returns.
    public var durability: Store.Durability
    /// The map size to start with; the map grows by itself.
    public var initialMapSize: Int
    /// Opens the store read-only: writes throw ``LodeError/readOnly(path:)``.
    public var readOnly: Bool
    /// The size of the reader table shared by every process using the store.
    public var maxReaders: Int
    /// How many idle read transactions this process keeps for reuse. Each holds one of the
    /// `maxReaders` slots shared by every process even while idle, so many processes with large pools
    /// can fill the table; reads beyond the pool begin and end a transaction of their own.
    public var readTransactionPoolSize: Int
    /// The mode of the files a store creates (`0o600`: only the owner reads and writes); a directory
    /// the store creates gets the same bits plus search where they grant reading (`0o700`). Widen it
    /// (`0o640`, `0o644`) to share a store with other users. Copies (`copy(to:)`) and raw loads get it
    /// too.
    public var fileMode: UInt32
    /// How often observed stores look for commits of other processes (this process's commits are
    /// seen at once).
    public var notificationPollInterval: Duration
    /// How long change-log entries are kept at least; older ones are pruned once no live results of
    /// this process still need them. Observers in other processes that fall further behind than this
    /// get a full re-evaluation (still exact, and marked as such).
    public var changeLogRetention: Duration
    /// A commit that changes more objects of one type than this logs them as one bulk change (with
    /// the count) instead of one by one, so its change-log entry stays small; live results of the type
    /// then evaluate their query again for that commit.
    public var changeLogBulkThreshold: Int
    /// When the structure of every page of the data file is checked before the first read (see
    /// `Store.checkPages(maxProblems:)` in `LodeInspection`): a damaged file is refused with
    /// ``StorageFailure/Reason/damaged`` instead of letting LMDB walk a page it cannot trust (LMDB
    /// has no checksums; a damaged page can make it abort or fault). A check reads the whole file
    /// once. By default (``PageCheck/whenUntrusted``) only a file that is not known to be the one
    /// Lode left is checked; see the article "Guarantees" for what that catches.
    public var pageCheck: PageCheck
    /// For the benchmark's baseline only: false opens and closes the store as before Lode kept a
    /// record of each clean close (no record read or written; every file counts as closed cleanly).
    package var keepsCloseRecord = true
    /// With history kept: a commit that inserts more objects than this records its inserts by
    /// reference (the values are read back from the records and the later history), so a bulk load
    /// does not write its values twice. Commits that insert fewer keep the inserted values in their
    /// entry. Settable for tests, which exercise both forms.
    package var historyInsertValuesLimit = 256
    /// How many versions a version held by this process (unrefreshed live results, results kept
    /// around) may fall behind the last commit before ``Store/versionLagHandler`` is told, once per
    /// holder and version. LMDB cannot reuse a page a held version still sees, so the data file grows
    /// with every commit made while it is held. 0 turns the warning off.
    public var versionLagWarning: Int
    /// How many versions a held version may fall behind before this process's writes are refused
    /// with ``LodeError/versionHeldTooLong(_:limit:)`` (nil: no limit), in the spirit of Realm's
    /// maximum number of active versions: a bound on the file's growth instead of a full disk.
    public var maxVersionLag: Int?
    /// At open, checks that the stored records of every type passed in `types:` still decode as the
    /// type declares, so a change that needs a migration is reported by name before anything reads
    /// the records (``LodeError/typeChangedWithoutMigration(type:key:field:reason:)``). The catalog
    /// lists an example record of each shape (sequence of field names) the type's records have had:
    /// each example and the first and last 16 records are decoded (112 µs for a type of a million
    /// objects, `lode-bench --only open-check`). When an example is gone (or the type has had more
    /// than 64 shapes) every record is read once, one decoded per shape of field names and value
    /// kinds, and the list is written again.
    public var checksTypesAtOpen: Bool
    /// For development only: when the check at open finds records of a type that no longer decode,
    /// erase every record of that type (loudly, on standard error) instead of failing the open.
    public var erasesIncompatibleTypes: Bool

    /// The key of an encrypted store (nil: a plain store). A new store is created encrypted with it;
    /// an existing one opens only with its own key (``LodeError/encryption(path:_:)`` otherwise).
    public var encryption: StoreEncryption?
    /// For an encrypted store: how many bytes of opened (decrypted) values this process keeps in
    /// memory, so that a value read again is copied instead of decrypted (64 MiB; below 64 KiB, none).
    /// The plaintext is zeroed when an entry is evicted and when the store's last handle closes; it
    /// is what SQLCipher's page cache and Realm's decrypted pages hold too. See the article
    /// "Encryption at rest".
    public var decryptedCacheSize: Int
    /// Keep the store's history — every commit's changes with their values, readable with
    /// `history(since:)` — within this retention (nil: this process does not turn it on). Once a
    /// store keeps history every writer records it, in any process; the last process to open the
    /// store with a retention sets it.
    public var history: HistoryRetention?
    /// The encryption format a new encrypted store is written in (tests write older ones to check
    /// that they still open).
    package var encryptionFormat = EncryptionRecord.currentFormat
    /// Makes a configuration; every parameter has a default.
    public init(
        durability: Store.Durability = .full, initialMapSize: Int = 256 << 20, readOnly: Bool = false,
        maxReaders: Int = 126, readTransactionPoolSize: Int = 4, fileMode: UInt32 = 0o600,
        notificationPollInterval: Duration = .milliseconds(50),
        changeLogRetention: Duration = .seconds(600), changeLogBulkThreshold: Int = 10_000,
        pageCheck: PageCheck = .whenUntrusted, versionLagWarning: Int = 1_000, maxVersionLag: Int? = nil,
        checksTypesAtOpen: Bool = true, erasesIncompatibleTypes: Bool = false,
        encryption: StoreEncryption? = nil, decryptedCacheSize: Int = 64 << 20,
        history: HistoryRetention? = nil
    ) {
        self.history = history
        self.encryption = encryption
        self.decryptedCacheSize = decryptedCacheSize
        self.checksTypesAtOpen = checksTypesAtOpen
        self.erasesIncompatibleTypes = erasesIncompatibleTypes
        self.versionLagWarning = versionLagWarning
        self.maxVersionLag = maxVersionLag
        self.pageCheck = pageCheck
        self.changeLogBulkThreshold = changeLogBulkThreshold
        self.changeLogRetention = changeLogRetention
        self.notificationPollInterval = notificationPollInterval
        self.durability = durability
        self.initialMapSize = initialMapSize
        self.readOnly = readOnly
        self.maxReaders = maxReaders
        self.readTransactionPoolSize = readTransactionPoolSize
        self.fileMode = fileMode
    }
}

extension StoreConfiguration {
    /// When a store's pages are checked at open (``StoreConfiguration/pageCheck``).
    ///
    /// Lode keeps a record of each clean close beside the data file (its identity, size, change time
    /// and meta pages: `.clean-close`, docs/FORMAT.md). A file is *trusted* when this process created
    /// it, when it is the file Lode last closed cleanly there and nothing has written to it since,
    /// or when another process that trusts it has it open. Any other file — a copy, a restored
    /// backup, a download, a file another program wrote, a file a process was writing when it was
    /// killed or the power went — is not, until its pages are checked.
    public enum PageCheck: Sendable, Equatable {
        /// Check every open, trusted or not.
        case always
        /// Check a file that is not trusted, then trust it (an open of a store Lode closed cleanly
        /// costs what it did without the check).
        case whenUntrusted
        /// Never check: a file that is not trusted is refused with
        /// ``LodeError/fileNotTrusted(path:reason:)`` before anything is read.
        case never
    }
}
