import SynchronizationSupport

/// The SDK's lock order, written once. A thread holding one of these locks takes only the
/// locks listed after it; every other lock in the SDK is a leaf, held alone. Debug builds
/// check this each time a lock is taken (``LockRank``), so a change that nests locks the
/// other way fails the first test that runs it, not a user's process under load.
extension LockRank {
    /// ``ReconnectingStorage/shared``: the reconnecting socket's state, taken before a
    /// connection's locks.
    static let reconnectingStorage = LockRank(10, "ReconnectingStorage.shared")
    /// ``WriteSide/state``: the socket's one writer. A flush or a direct write holds it while
    /// it takes messages from the machine, so it comes before the machine's lock.
    static let writeSide = LockRank(20, "WriteSide.state")
    /// ``ClientConnection/machine``: the connection's state machine, the last of the order:
    /// nothing but a leaf lock is taken while it is held.
    static let connectionMachine = LockRank(30, "ClientConnection.machine")
}
