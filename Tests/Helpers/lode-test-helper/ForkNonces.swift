import Foundation
import LodeStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `fork-nonces`: seals a value (so the nonce pool is drawn), forks, and seals three more values in
/// the child and then three in the parent, printing each seal's nonce in hex as `child HEX HEX HEX`
/// and `parent HEX HEX HEX`. Forked before any thread of this process starts, so the child may use
/// the sealer's lock. A child that kept drawing from the pool it inherited would print the
/// parent's nonces.
func forkNonces() throws {
    let sealer = try RecordSealer(key: try StoreKey.random())
    func nonce() -> String {
        let sealed = Array("a value".utf8).withUnsafeBytes { plain in
            Array("Type/1".utf8).withUnsafeBytes { sealer.seal(plain, boundTo: $0) }
        }
        return sealed[1..<25].map { String(format: "%02x", $0) }.joined()
    }
    _ = nonce()
    fflush(nil)
    let child = fork()
    guard child >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    if child == 0 {
        print("child", nonce(), nonce(), nonce())
        fflush(nil)
        _exit(0)
    }
    var status: Int32 = 0
    guard waitpid(child, &status, 0) == child, status == 0 else {
        throw POSIXError(
            .ECHILD, userInfo: [NSLocalizedDescriptionKey: "the child ended with status \(status)"])
    }
    print("parent", nonce(), nonce(), nonce())
}
