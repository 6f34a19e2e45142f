import CLibWebSockets
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// Fault controls: dropping, closing and refusing connections on the tests' request.
extension ServerLoop {
    /// Drops every WebSocket connection without a close frame (lws closes them at its next
    /// pass). Returns the ids of those it dropped.
    func disconnectAll() -> Set<Int> {
        var dropped = Set<Int>()
        var sockets: [OpaquePointer] = []
        for case let connection as ServerConnection in connections.values {
            guard let wsi = connection.wsi else { continue }
            connection.discardInputAtDrop(wsi)
            sockets.append(wsi)
            dropped.insert(connection.id)
        }
        // Posted work runs outside any lws callback: closing now is safe, and each close
        // removes its connection from `connections` (hence the list first).
        for wsi in sockets { wss_close_now(wsi) }
        return dropped
    }

    /// Whether any of the connections `ids` still has its socket (lws has not freed it yet).
    func holdsAny(of ids: Set<Int>) -> Bool {
        connections.values.contains { ($0 as? ServerConnection).map { ids.contains($0.id) } ?? false }
    }

    /// Closes every WebSocket connection with a close frame carrying `code`. Returns how many.
    func goAwayAll(code: UInt32) -> Int {
        var count = 0
        for case let connection as ServerConnection in connections.values {
            guard let wsi = connection.wsi else { continue }
            connection.goAway(wsi, code: code)
            count += 1
        }
        return count
    }

    /// Drops new TCP connections as soon as they are accepted, for `duration`.
    func refuseConnections(for duration: Duration) {
        refuseUntil = .now + duration
    }

    // MARK: - Bookkeeping

    func attach(_ object: AnyObject, to wsi: OpaquePointer) {
        connections[ObjectIdentifier(object)] = object
        lws_set_opaque_user_data(wsi, Unmanaged.passUnretained(object).toOpaque())
    }

    func detach(_ wsi: OpaquePointer, _ object: AnyObject) {
        lws_set_opaque_user_data(wsi, nil)
        connections[ObjectIdentifier(object)] = nil
    }
}
