extension TestServer {
    /// How a replayed recording matches what the client sends
    /// (``Handler/replaying(_:matching:timing:)``).
    public enum ReplayMatching: Sendable, Hashable {
        /// Each client message must equal the recorded one, in order; the first that differs
        /// is answered with a 1008 close saying where (`TestServer --replay`'s default).
        case content
        /// Any message stands for the recorded one: only the count and order of messages
        /// pace the replay (`--replay-loose`).
        case loose
    }

    /// When a replayed recording sends the server's messages.
    public enum ReplayTiming: Sendable, Hashable {
        /// With the gaps between events that the recording shows.
        case recorded
        /// As soon as the client messages before each have arrived (`--replay-fast`).
        case immediate
    }
}
