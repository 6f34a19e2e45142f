/// Why a ``TestServer`` could not start or an expectation about it was not met.
public enum TestServerError: Error, Sendable, CustomStringConvertible {
    /// The server could not listen (e.g. the port is taken).
    case couldNotListen(String)
    /// The TLS certificates could not be made.
    case certificateGeneration(String)
    /// ``TestServer/waitUntil(timeout:_:_:)`` gave up.
    case timedOut(String)
    /// A handler's ``TestServer/Connection`` was used after the connection ended (its id).
    case connectionEnded(Int)
    /// A handler's path is taken by a built-in route, or is not a path.
    case invalidHandlerPath(String)
    /// A recording ``TestServer/Recording`` could not read: where, and why.
    case invalidRecording(String)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .couldNotListen(let reason): "test server could not listen: \(reason)"
        case .certificateGeneration(let reason): "test certificates: \(reason)"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .connectionEnded(let id): "test server connection \(id) has ended"
        case .invalidHandlerPath(let reason): "handler path: \(reason)"
        case .invalidRecording(let reason): "recording: \(reason)"
        }
    }
}
