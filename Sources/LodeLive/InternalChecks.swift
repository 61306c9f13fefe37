#if LODE_INTERNAL_CHECKS
    /// True when the internal invariant checks are compiled in: `LODE_INTERNAL_CHECKS=1` in the
    /// environment of the build (`make test` sets it). Each structure that keeps an invariant checks
    /// all of it after every mutation, which costs time in proportion to its size; builds without the
    /// variable compile the checks out.
    let internalChecksEnabled = true
#else
    /// True when the internal invariant checks are compiled in: `LODE_INTERNAL_CHECKS=1` in the
    /// environment of the build (`make test` sets it). Builds without it compile the checks out.
    let internalChecksEnabled = false
#endif

/// The size up to which a structure checks all of its invariants after a mutation; a larger one checks
/// what the mutation touched, so that a test over a large store stays linear rather than quadratic.
let internalChecksFullLimit = 2_048
