import CLibWebSockets
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// Raw takeover: sockets taken from lws before it answers, for routes that misbehave
/// below the WebSocket layer.
extension ServerLoop {
    /// Takes the socket away from lws before it answers the upgrade, for routes that must
    /// misbehave below the WebSocket layer (a handshake that is late or never comes).
    ///
    /// lws 4.1 offers no way to defer or replace its upgrade answer, and closing its wsi
    /// would shut the socket down. So the socket is duplicated, lws's descriptor number is
    /// pointed at a throwaway socket (which lws then closes), and the duplicate is adopted
    /// back as a raw socket this server drives byte by byte.
    func takeOver(_ wsi: OpaquePointer, route: ServerRoute, path: String, query: [String: String]) -> Int32 {
        let descriptor = lws_get_socket_fd(wsi)
        let key = header(wsi, WSI_TOKEN_KEY) ?? ""
        let stolen = dup(descriptor)
        let placeholder = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard stolen >= 0, placeholder >= 0, dup2(placeholder, descriptor) >= 0 else {
            if stolen >= 0 { close(stolen) }
            if placeholder >= 0 { close(placeholder) }
            return -1
        }
        close(placeholder)
        let id = recorder.opened { id in
            TestServer.ConnectionRecord(
                id: id, path: path, query: query, headers: [:], subprotocol: nil, compressed: false, openedAt: .now)
        }
        let peer = RawPeer(id: id, route: route, key: key, recorder: recorder)
        // Adopt on the next loop pass, after lws has let go of its wsi.
        pendingAdoptions.append((peer, stolen))
        thread?.post(LoopClosure { [self] in adoptPending() })
        return -1
    }

    func adoptPending() {
        let adoptions = pendingAdoptions
        pendingAdoptions = []
        for (peer, descriptor) in adoptions {
            guard let vhost else {
                close(descriptor)
                continue
            }
            pendingRawPeer = peer
            var descriptorUnion = lws_sock_file_fd_type()
            descriptorUnion.sockfd = descriptor
            let adopted = lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_SOCKET, descriptorUnion, Self.rawProtocolName, nil)
            pendingRawPeer = nil
            if adopted == nil { close(descriptor) }
        }
    }
}
