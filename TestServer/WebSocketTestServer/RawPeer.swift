import CLibWebSockets
import Glibc
import LibWebSocketsLoop

/// A plain-TCP connection the test server drives byte by byte after taking its socket from
/// lws (see `ServerLoop.takeOver`): for handshakes that come late or never, and for the
/// `/hostile/` routes, which send what no well-behaved server would. What the route does
/// is ``RawRouteMachine``'s; this carries its actions out with lws's raw socket calls.
///
/// Only the server's loop thread touches it.
final class RawPeer {
    let id: Int
    let recorder: ServerRecorder
    private var machine: RawRouteMachine

    init(id: Int, route: ServerRoute, key: String, recorder: ServerRecorder) {
        self.id = id
        self.recorder = recorder
        machine = RawRouteMachine(route: route, key: key)
    }

    /// lws adopted the socket.
    func adopted(_ wsi: OpaquePointer) -> Int32 {
        perform(machine.start(), on: wsi)
    }

    func handle(_ wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_TIMER:
            return perform(machine.timerFired(), on: wsi)
        case LWS_CALLBACK_RAW_RX:
            let bytes = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
            return perform(machine.received(bytes), on: wsi)
        case LWS_CALLBACK_RAW_CLOSE, LWS_CALLBACK_WSI_DESTROY:
            recorder.markClosed(id)
        default:
            break
        }
        return 0
    }

    /// Carries out `action`; returns what the lws callback returns (-1 closes the socket).
    private func perform(_ action: RawRouteMachine.Action, on wsi: OpaquePointer) -> Int32 {
        recorder.record(action.received, connection: id)
        if !action.write.isEmpty, !write(wsi, action.write) { return -1 }
        if action.end { return -1 }
        if let timer = action.timer {
            EventLoopThread.setTimer(of: wsi, after: max(.microseconds(1), timer))
        }
        return 0
    }

    private func write(_ wsi: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: ServerConnection.headroom) + bytes
        let count = bytes.count
        return buffer.withUnsafeMutableBufferPointer { pointer in
            wss_write(wsi, pointer.baseAddress! + ServerConnection.headroom, count, LWS_WRITE_HTTP.rawValue) >= 0
        }
    }
}
