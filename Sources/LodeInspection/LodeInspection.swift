// What tools that read a store without its Swift types use (lode-dump, the benchmark): the record and
// key codecs, exported from the codec layer, and the inspection API of this module — file and
// reader facts, raw databases, page checks, raw loads and typed restores. Apps import `Lode`.
@_exported import LodeCodec
