import SynchronizationSupport

/// wsdump's lock order, written once (see ``LockRank``); every other lock is a leaf.
extension LockRank {
    /// The console's footer: held while a line and the redrawn footer are queued, so the
    /// two stay together and in order.
    static let consoleFooter = LockRank(10, "Console.footer")
    /// The output writer's queue, taken while the footer is held.
    static let outputQueue = LockRank(20, "OutputWriter.state")
}
