import LibWebSocketsLoop
import CLibWebSockets
import Glibc
import Synchronization
import SynchronizationSupport

/// Resolves host names off the loop thread.
///
/// libwebsockets 4.1 (as built by Debian) resolves with a blocking `getaddrinfo` on its
/// loop thread, which would stall every connection of the loop behind one slow DNS
/// server. Connections therefore resolve first, on a short-lived thread of their own
/// (not a Dispatch or cooperative worker, which a slow lookup would tie up), and hand lws
/// a numeric address (the name still goes to lws for `Host`, SNI and certificate checks).
enum HostResolver {
    /// Returns a numeric address for `host`: the host itself when it is an IP literal,
    /// else the first IPv4 address (then the first IPv6 one) `getaddrinfo` finds.
    /// Throws ``WebSocketError/connectionFailed(_:)`` when the name does not resolve, and
    /// `CancellationError` when the task is cancelled (the lookup is left to finish).
    static func resolve(_ host: String) async throws -> String {
        let all = try await resolveAll(host)
        return all.first { !$0.contains(":") } ?? all[0]
    }

    /// Every numeric address of `host`, in the order `getaddrinfo` sorts them (RFC 6724),
    /// without repeats: the host itself when it is an IP literal. Throws as ``resolve(_:)``.
    static func resolveAll(_ host: String) async throws -> [String] {
        if isNumericAddress(host) { return [host] }
        let once = ResumeOnce()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<[String], any Error>) in
                once.install(continuation)
                let started = DetachedThread.run(name: "ws-resolve") {
                    once.resume(with: lookUp(host))
                }
                if !started {
                    once.resume(with: .failure(WebSocketError.connectionFailed("could not start a thread to resolve '\(host)'")))
                }
            }
        } onCancel: {
            once.resume(with: .failure(CancellationError()))
        }
    }

    static func isNumericAddress(_ host: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }

    private static func lookUp(_ host: String) -> Result<[String], any Error> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(WebSocketError.connectionFailed("could not resolve host '\(host)': \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let text = numericText(current.pointee), !addresses.contains(text) { addresses.append(text) }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(WebSocketError.connectionFailed("could not resolve host '\(host)': no usable address"))
        }
        return .success(addresses)
    }

    private static func numericText(_ info: addrinfo) -> String? {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(info.ai_addr, info.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// Resumes a continuation exactly once, whichever of the lookup and a cancellation comes first.
private final class ResumeOnce: Sendable {
    private enum State {
        case idle
        case waiting(UnsafeContinuation<[String], any Error>)
        case early(Result<[String], any Error>)
        case done
    }

    private let state = AnnotatedMutex<State>(.idle)

    func install(_ continuation: UnsafeContinuation<[String], any Error>) {
        let early: Result<[String], any Error>? = state.withLock { state in
            if case .early(let result) = state {
                state = .done
                return result
            }
            state = .waiting(continuation)
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<[String], any Error>) {
        let continuation: UnsafeContinuation<[String], any Error>? = state.withLock { state in
            switch state {
            case .idle:
                state = .early(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .early, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
