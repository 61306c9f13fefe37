import Foundation

#if !canImport(UIKit) && !canImport(AppKit)
    extension IndexPath {
        /// An index path for an item in a section (UIKit's spelling, for platforms without it).
        public init(item: Int, section: Int) { self.init(indexes: [section, item]) }

        /// An index path for a row in a section.
        public init(row: Int, section: Int) { self.init(indexes: [section, row]) }

        /// The section: the first index.
        public var section: Int {
            get { self[0] }
            set { self[0] = newValue }
        }

        /// The item: the second index.
        public var item: Int {
            get { self[1] }
            set { self[1] = newValue }
        }

        /// The row: the second index (table views' word for `item`).
        public var row: Int {
            get { self[1] }
            set { self[1] = newValue }
        }
    }
#endif
