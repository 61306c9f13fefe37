import CSodium

/// Seals and opens the values of an encrypted store with keys derived from its ``StoreKey``:
/// XChaCha20-Poly1305 (IETF) under a fresh random 24-byte nonce per value, bound to associated data
/// (the store binds a record to its type and primary key, so a sealed value moved to another key or
/// type does not open); a keyed BLAKE2b hash for the keys LMDB sorts; and a key check kept in the
/// store, so the wrong key is refused at open before anything is read.
///
/// A sealed value is one byte of format (1), the nonce, the ciphertext and the 16-byte tag.
///
/// The keyed hash of stored keys depends on the store's encryption format (``EncryptionRecord``):
/// BLAKE2b in format 1, SipHash-2-4 with a 128-bit output (libsodium's `siphashx24`) from format 2
/// on, a twentieth of the cost per lookup.
package final class RecordSealer: @unchecked Sendable {
    /// The first byte of a value sealed by this format.
    package static let format: UInt8 = 1
    static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    /// The bytes a sealed value has beyond its plaintext.
    package static let overhead = 1 + nonceLength + tagLength

    // Unchecked Sendable: the subkeys are written once, in `init`, and only read after.
    private let sealingKey: UnsafeMutableRawPointer
    private let hashingKey: UnsafeMutableRawPointer
    private let checkingKey: UnsafeMutableRawPointer
    /// The key of the synthetic nonces of deterministic seals.
    private let nonceKey: UnsafeMutableRawPointer
    /// The store's encryption format: which keyed hash stands for stored keys.
    package let format: Int
    private let nonces = NonceSource()

    /// Derives the sealer's keys from `key` (each a subkey of its own: libsodium's `crypto_kdf`) for
    /// a store of encryption format `format` (``EncryptionRecord/currentFormat`` for a new one).
    package init(key: StoreKey, format: Int = EncryptionRecord.currentFormat) throws(EncryptionError) {
        try Sodium.ready()
        self.format = format
        func subkey(_ id: UInt64) throws(EncryptionError) -> UnsafeMutableRawPointer {
            guard let memory = sodium_malloc(32) else {
                throw .unavailable("no memory for a key (sodium_malloc)")
            }
            let status = key.withBytes { master in
                crypto_kdf_derive_from_key(
                    memory.assumingMemoryBound(to: UInt8.self), 32, id, "LodeSeal",
                    master.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard status == 0 else {
                sodium_free(memory)
                throw .unavailable("key derivation failed (crypto_kdf)")
            }
            sodium_mprotect_readonly(memory)
            return memory
        }
        let sealing = try subkey(1)
        let hashing: UnsafeMutableRawPointer
        do { hashing = try subkey(2) } catch {
            sodium_free(sealing)
            throw error
        }
        let checking: UnsafeMutableRawPointer
        do { checking = try subkey(3) } catch {
            sodium_free(sealing)
            sodium_free(hashing)
            throw error
        }
        do { nonceKey = try subkey(4) } catch {
            sodium_free(sealing)
            sodium_free(hashing)
            sodium_free(checking)
            throw error
        }
        checkingKey = checking
        sealingKey = sealing
        hashingKey = hashing
    }

    deinit {
        // sodium_free zeroes the bytes before it frees them.
        sodium_free(sealingKey)
        sodium_free(hashingKey)
        sodium_free(checkingKey)
        sodium_free(nonceKey)
    }

    /// `plaintext` sealed under a fresh nonce, bound to `context` (which is not stored: opening
    /// needs the same).
    package func seal(_ plaintext: UnsafeRawBufferPointer, boundTo context: UnsafeRawBufferPointer) -> [UInt8]
    {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        return [UInt8](unsafeUninitializedCapacity: Self.overhead + plaintext.count) { out, initialized in
            seal(
                plaintext, empty, empty, boundTo: context, deterministic: false,
                into: UnsafeMutableRawBufferPointer(out))
            initialized = out.count
        }
    }

    /// Seals the concatenation of `first`, `second` and `third` (any may be empty) bound to
    /// `context` into `out` (``overhead`` bytes more than they). With `deterministic` the nonce is a
    /// keyed hash of the context and the plaintext (a synthetic nonce, as SIV modes make): equal
    /// inputs seal to equal bytes, which reveals only that two sealed values are equal.
    package func seal(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer,
        boundTo context: UnsafeRawBufferPointer, deterministic: Bool, into out: UnsafeMutableRawBufferPointer
    ) {
        let length = first.count + second.count + third.count
        precondition(out.count == Self.overhead + length, "the output of a seal is overhead + plaintext")
        out[0] = Self.format
        let nonce = out.baseAddress! + 1
        let body = nonce + Self.nonceLength
        // The plaintext is gathered in place, then encrypted over itself (libsodium allows it).
        var offset = 0
        func gather(_ part: UnsafeRawBufferPointer) {
            guard part.count > 0 else { return }
            (body + offset).copyMemory(from: part.baseAddress!, byteCount: part.count)
            offset += part.count
        }
        gather(first)
        gather(second)
        gather(third)
        if deterministic {
            // The state is an opaque, 64-byte-aligned structure of libsodium's: room for it and its
            // alignment on the stack (asking for an alignment of 64 puts the buffer on the heap).
            withUnsafeTemporaryAllocation(byteCount: crypto_generichash_statebytes() + 63, alignment: 16) {
                memory in
                let state = OpaquePointer(memory.baseAddress!.alignedUp(toMultipleOf: 64))
                _ = crypto_generichash_init(
                    state, UnsafeRawPointer(nonceKey).assumingMemoryBound(to: UInt8.self), 32,
                    Self.nonceLength)
                _ = crypto_generichash_update(
                    state, context.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(context.count))
                _ = crypto_generichash_update(state, body.assumingMemoryBound(to: UInt8.self), UInt64(length))
                _ = crypto_generichash_final(
                    state, nonce.assumingMemoryBound(to: UInt8.self), Self.nonceLength)
            }
        } else {
            nonces.fill(nonce, count: Self.nonceLength)
        }
        var written: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            body.assumingMemoryBound(to: UInt8.self), &written, body.assumingMemoryBound(to: UInt8.self),
            UInt64(length), context.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(context.count),
            nil,
            UnsafeRawPointer(nonce).assumingMemoryBound(to: UInt8.self),
            UnsafeRawPointer(sealingKey).assumingMemoryBound(to: UInt8.self))
    }

    /// Opens `sealed` (bound to `context`) into `out`, which holds at least `sealed.count - overhead`
    /// bytes; returns the plaintext's length, or nil when it does not open.
    package func open(
        _ sealed: UnsafeRawBufferPointer, boundTo context: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int? {
        guard sealed.count >= Self.overhead, sealed[0] == Self.format else { return nil }
        let length = sealed.count - Self.overhead
        guard out.count >= length else { return nil }
        let nonce = sealed.baseAddress! + 1
        let ciphertext = nonce + Self.nonceLength
        var written: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
            ciphertext.assumingMemoryBound(to: UInt8.self), UInt64(sealed.count - 1 - Self.nonceLength),
            context.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(context.count),
            nonce.assumingMemoryBound(to: UInt8.self),
            UnsafeRawPointer(sealingKey).assumingMemoryBound(to: UInt8.self))
        return status == 0 ? length : nil
    }

    /// The plaintext of `sealed`, which must have been sealed by this key bound to `context`.
    ///
    /// - Throws: ``EncryptionError/sealBroken(_:)`` when it does not open: another key, another
    ///   context, a changed byte, a value cut short, or a format this version does not know.
    package func open(_ sealed: UnsafeRawBufferPointer, boundTo context: UnsafeRawBufferPointer)
        throws(EncryptionError) -> [UInt8]
    {
        guard sealed.count >= Self.overhead else {
            throw .sealBroken("\(sealed.count) bytes, shorter than a sealed value (\(Self.overhead))")
        }
        guard sealed[0] == Self.format else {
            throw .sealBroken("sealed by format \(sealed[0]), which this version does not know")
        }
        var plaintext = [UInt8](repeating: 0, count: sealed.count - Self.overhead)
        guard plaintext.withUnsafeMutableBytes({ open(sealed, boundTo: context, into: $0) }) != nil else {
            throw .sealBroken("authentication failed (another key, another place, or a damaged byte)")
        }
        return plaintext
    }

    /// The length of a keyed hash (``keyedHash(_:into:)``).
    package static let keyedHashLength = 16

    /// Writes a keyed hash of `bytes` (16 bytes) to `out`: what stands for a key LMDB sorts, equal
    /// for equal keys and meaningless without the key. BLAKE2b under the store's hashing key in
    /// format 1; SipHash-2-4-128 under its first 16 bytes from format 2 on (a pseudorandom function
    /// as well: collisions among a billion keys have a chance near 2⁻⁶⁹).
    package func keyedHash(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        // An empty input may have no address: any valid one does, as none of it is read.
        let input = (bytes.baseAddress ?? UnsafeRawPointer(out)).assumingMemoryBound(to: UInt8.self)
        let key = UnsafeRawPointer(hashingKey).assumingMemoryBound(to: UInt8.self)
        let output = out.assumingMemoryBound(to: UInt8.self)
        if format >= 2 {
            _ = crypto_shorthash_siphashx24(output, input, UInt64(bytes.count), key)
        } else {
            _ = crypto_generichash(output, Self.keyedHashLength, input, UInt64(bytes.count), key, 32)
        }
    }

    /// The value a store keeps to recognize its key: a keyed hash of a fixed text under a key of its
    /// own (it says nothing of the sealing or hashing keys).
    package var keyCheck: [UInt8] {
        var check = [UInt8](repeating: 0, count: 32)
        let text = Array("Lode store key check, format 1".utf8)
        check.withUnsafeMutableBytes { out in
            text.withUnsafeBytes { input in
                _ = crypto_generichash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                    input.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                    UnsafeRawPointer(checkingKey).assumingMemoryBound(to: UInt8.self), 32)
            }
        }
        return check
    }

    /// Whether `stored` is this key's check value (compared in constant time).
    package func recognizes(_ stored: [UInt8]) -> Bool {
        let mine = keyCheck
        guard stored.count == mine.count else { return false }
        return stored.withUnsafeBytes { a in
            mine.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, mine.count) == 0 }
        }
    }
}
