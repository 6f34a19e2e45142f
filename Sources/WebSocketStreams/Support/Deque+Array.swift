import DequeModule

extension Deque {
    /// The elements as an `Array`, without touching the shared empty-array storage when
    /// there are none.
    ///
    /// `Array(deque)` of an empty `Deque` goes through
    /// `ContiguousArray(unsafeUninitializedCapacity: 0)`, which stores a count of 0 into
    /// the runtime's one global empty-array object; ThreadSanitizer reports every two
    /// threads doing that at once as a data race. Our connections end on different service
    /// threads all the time, so the suite under TSan would be all noise.
    var elementsAsArray: [Element] {
        isEmpty ? [] : Array(self)
    }
}
