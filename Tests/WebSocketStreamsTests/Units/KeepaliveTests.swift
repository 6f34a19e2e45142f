import Testing
@testable import WebSocketStreams

@Suite("Keepalive: when to ping and when a missing pong ends the connection")
struct KeepaliveTests {
    static let start = ContinuousClock.now

    /// `seconds` after ``start``.
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    /// A keep-alive every 10 s, pongs due within 5 s.
    static func make(interval: Duration? = .seconds(10)) -> Keepalive {
        Keepalive(interval: interval, pongTimeout: .seconds(5), now: start)
    }

    /// Sends the keep-alive ping the way the transport does; returns its payload.
    static func sendKeepalive(_ keepalive: inout Keepalive, at now: ContinuousClock.Instant) -> [UInt8] {
        let (tag, id) = keepalive.nextKeepalivePayload()
        keepalive.pingSent(tag: tag, id: id, at: now)
        return Keepalive.payload(tag: tag, id: id)
    }

    @Test("ping payloads: a tag byte, then the id big-endian")
    func payloads() {
        #expect(Keepalive.payload(tag: .keepalive, id: 0x0102_0304_0506_0708) == [0x4B, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Keepalive.payload(tag: .user, id: 0) == [0x55, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(Keepalive.payload(tag: .user, id: .max) == [0x55] + [UInt8](repeating: 0xFF, count: 8))
        var keepalive = Self.make()
        #expect(keepalive.nextKeepalivePayload() == (.keepalive, 1))
        #expect(keepalive.nextKeepalivePayload() == (.keepalive, 2))
    }

    @Test("a ping is due one interval after the start, not before")
    func pingDue() {
        var keepalive = Self.make()
        #expect(keepalive.nextDeadline == Self.at(10))
        #expect(keepalive.mayPing)
        #expect(keepalive.tick(at: Self.at(9.999)) == .none)
        #expect(keepalive.tick(at: Self.at(10)) == .sendPing)
        // Asked once: until the ping is sent, nothing else is due.
        #expect(keepalive.nextDeadline == nil)
        #expect(keepalive.tick(at: Self.at(11)) == .none)
        _ = Self.sendKeepalive(&keepalive, at: Self.at(10.5))
        #expect(!keepalive.mayPing)
        #expect(keepalive.nextDeadline == Self.at(15.5))
        #expect(keepalive.inFlight?.tag == .keepalive && keepalive.inFlight?.id == 1)
    }

    @Test("the matching pong clears the ping, reports the round trip and schedules the next ping")
    func matchingPong() throws {
        var keepalive = Self.make()
        #expect(keepalive.tick(at: Self.at(10)) == .sendPing)
        let payload = Self.sendKeepalive(&keepalive, at: Self.at(10))
        let pong = keepalive.pongReceived(payload, at: Self.at(10.25))
        let answered = try #require(pong)
        #expect(answered.0.tag == .keepalive && answered.0.id == 1 && answered.0.sentAt == Self.at(10))
        #expect(answered.1 == .milliseconds(250))
        #expect(keepalive.inFlight == nil && keepalive.mayPing)
        #expect(keepalive.nextDeadline == Self.at(20.25))
        #expect(keepalive.tick(at: Self.at(20)) == .none)
        #expect(keepalive.tick(at: Self.at(20.25)) == .sendPing)
        // The same pong again answers nothing.
        #expect(keepalive.pongReceived(payload, at: Self.at(20.5)) == nil)
    }

    @Test("pongs that answer no ping in flight are ignored")
    func unsolicitedPongs() {
        var keepalive = Self.make()
        #expect(keepalive.pongReceived(Keepalive.payload(tag: .keepalive, id: 1), at: Self.at(1)) == nil)
        #expect(keepalive.pongReceived([], at: Self.at(1)) == nil)
        #expect(keepalive.nextDeadline == Self.at(10))
        keepalive.pingSent(tag: .user, id: 7, at: Self.at(2))
        let wrong: [[UInt8]] = [
            [],                                              // empty heartbeat
            Keepalive.payload(tag: .keepalive, id: 7),       // wrong tag
            Keepalive.payload(tag: .user, id: 6),            // wrong id
            Keepalive.payload(tag: .user, id: 7 << 8),       // wrong byte order
            Keepalive.payload(tag: .user, id: 7) + [0],      // too long
            Array(Keepalive.payload(tag: .user, id: 7).dropLast()),
        ]
        for payload in wrong {
            #expect(keepalive.pongReceived(payload, at: Self.at(3)) == nil, "\(payload)")
            #expect(keepalive.inFlight?.id == 7)
        }
        #expect(keepalive.pongReceived(Keepalive.payload(tag: .user, id: 7), at: Self.at(3)) != nil)
        #expect(keepalive.inFlight == nil)
    }

    @Test("no pong by the deadline: timed out")
    func timeout() {
        var keepalive = Self.make()
        _ = keepalive.tick(at: Self.at(10))
        _ = Self.sendKeepalive(&keepalive, at: Self.at(10))
        #expect(keepalive.tick(at: Self.at(14.999)) == .none)
        #expect(keepalive.tick(at: Self.at(15)) == .timedOut)
        #expect(keepalive.tick(at: Self.at(30)) == .timedOut)
    }

    @Test("data arriving while a ping waits moves the deadline to a full timeout after it")
    func dataWhileWaiting() {
        var keepalive = Self.make()
        // Data with no ping in flight changes nothing.
        keepalive.dataReceived(at: Self.at(9))
        _ = keepalive.tick(at: Self.at(10))
        _ = Self.sendKeepalive(&keepalive, at: Self.at(10))
        #expect(keepalive.tick(at: Self.at(15)) == .timedOut)

        var waiting = Self.make()
        _ = waiting.tick(at: Self.at(10))
        _ = Self.sendKeepalive(&waiting, at: Self.at(10))
        waiting.dataReceived(at: Self.at(12))
        waiting.dataReceived(at: Self.at(13))
        #expect(waiting.tick(at: Self.at(15)) == .none)
        #expect(waiting.nextDeadline == Self.at(18))
        #expect(waiting.tick(at: Self.at(17.9)) == .none)
        #expect(waiting.tick(at: Self.at(18)) == .timedOut)
    }

    @Test("data from before the ping does not extend it")
    func dataBeforePing() {
        var keepalive = Self.make()
        keepalive.pingSent(tag: .user, id: 1, at: Self.at(1))
        keepalive.dataReceived(at: Self.at(2))
        // A new ping forgets data seen for the previous one.
        #expect(keepalive.pongReceived(Keepalive.payload(tag: .user, id: 1), at: Self.at(3)) != nil)
        keepalive.pingSent(tag: .user, id: 2, at: Self.at(4))
        #expect(keepalive.tick(at: Self.at(9)) == .timedOut)
    }

    @Test("paused reading: nothing is due; resuming gives a ping in flight a fresh timeout")
    func pauseAndResume() {
        var keepalive = Self.make()
        _ = keepalive.tick(at: Self.at(10))
        _ = Self.sendKeepalive(&keepalive, at: Self.at(10))
        keepalive.pause()
        #expect(keepalive.isPaused)
        #expect(keepalive.nextDeadline == nil)
        #expect(keepalive.tick(at: Self.at(100)) == .none)
        keepalive.resume(at: Self.at(100))
        #expect(!keepalive.isPaused)
        #expect(keepalive.nextDeadline == Self.at(105))
        #expect(keepalive.tick(at: Self.at(104)) == .none)
        #expect(keepalive.tick(at: Self.at(105)) == .timedOut)
        // Resuming when not paused changes nothing.
        var running = Self.make()
        running.resume(at: Self.at(5))
        #expect(running.nextDeadline == Self.at(10))
    }

    @Test("resuming with no ping in flight: the next keep-alive is a full interval away")
    func resumeIdle() {
        var keepalive = Self.make()
        keepalive.pause()
        #expect(keepalive.tick(at: Self.at(50)) == .none)
        keepalive.resume(at: Self.at(50))
        #expect(keepalive.nextDeadline == Self.at(60))
        #expect(keepalive.tick(at: Self.at(59)) == .none)
        #expect(keepalive.tick(at: Self.at(60)) == .sendPing)
    }

    @Test("unread input at the deadline extends it once per timeout")
    func unreadInputWaiting() {
        var keepalive = Self.make()
        _ = keepalive.tick(at: Self.at(10))
        _ = Self.sendKeepalive(&keepalive, at: Self.at(10))
        // Before the deadline the flag changes nothing.
        #expect(keepalive.tick(at: Self.at(12), unreadInputWaiting: true) == .none)
        #expect(keepalive.nextDeadline == Self.at(15))
        #expect(keepalive.tick(at: Self.at(16), unreadInputWaiting: true) == .none)
        #expect(keepalive.nextDeadline == Self.at(21))
        #expect(keepalive.tick(at: Self.at(20)) == .none)
        #expect(keepalive.tick(at: Self.at(21)) == .timedOut)
    }

    @Test("no interval: never a keep-alive, but a user's ping still times out")
    func noInterval() {
        var keepalive = Self.make(interval: nil)
        #expect(keepalive.nextDeadline == nil)
        #expect(keepalive.tick(at: Self.at(1_000_000)) == .none)
        keepalive.pause()
        keepalive.resume(at: Self.at(5))
        #expect(keepalive.nextDeadline == nil)
        keepalive.pingSent(tag: .user, id: 3, at: Self.at(10))
        #expect(keepalive.nextDeadline == Self.at(15))
        #expect(keepalive.pongReceived(Keepalive.payload(tag: .user, id: 3), at: Self.at(11)) != nil)
        #expect(keepalive.nextDeadline == nil)
        #expect(keepalive.tick(at: Self.at(1_000_000)) == .none)
        keepalive.pingSent(tag: .user, id: 4, at: Self.at(20))
        #expect(keepalive.tick(at: Self.at(25)) == .timedOut)
    }

    @Test(".idle: data arriving puts the due ping off to an interval after it, without re-arming per message")
    func idleWaitsForSilence() {
        var keepalive = Keepalive(interval: .seconds(10), pongTimeout: .seconds(5), mode: .idle, now: Self.start)
        keepalive.dataReceived(at: Self.at(7))
        #expect(keepalive.nextDeadline == Self.at(10))   // the timer is not moved by data
        #expect(keepalive.tick(at: Self.at(10)) == .none)
        #expect(keepalive.nextDeadline == Self.at(17))
        #expect(keepalive.tick(at: Self.at(17)) == .sendPing)
    }

    @Test(".periodic: data does not put pings off; the next is an interval after the last ping")
    func periodicKeepsSchedule() {
        var keepalive = Keepalive(interval: .seconds(10), pongTimeout: .seconds(5), mode: .periodic, now: Self.start)
        keepalive.dataReceived(at: Self.at(7))
        #expect(keepalive.tick(at: Self.at(10)) == .sendPing)
        keepalive.pingSent(tag: .keepalive, id: 1, at: Self.at(10))
        _ = keepalive.pongReceived(Keepalive.payload(tag: .keepalive, id: 1), at: Self.at(12))
        #expect(keepalive.nextDeadline == Self.at(20))
    }

    @Test("the shared grid: ping times move later onto one grid for every connection, never earlier")
    func sharedGrid() throws {
        #expect(Keepalive.sharedGrid(for: .seconds(20)) == .seconds(1))
        #expect(Keepalive.sharedGrid(for: .seconds(5)) == .milliseconds(500))
        #expect(Keepalive.sharedGrid(for: nil) == nil)
        let grid = try #require(Keepalive.sharedGrid(for: .seconds(20)))
        let keepalive = Keepalive(interval: .seconds(20), pongTimeout: .seconds(5), grid: grid, now: Self.at(0.3))
        let due = try #require(keepalive.nextDeadline)
        #expect(due >= Self.at(20.3) && due < Self.at(21.3))     // later by less than one tick
        #expect(keepalive.aligned(due) == due)                     // a tick stays where it is
        // Two connections due within one tick of each other, on the same side of it, share it.
        #expect(keepalive.aligned(due - .milliseconds(200)) == due)
        #expect(keepalive.aligned(due - .milliseconds(700)) == due)
        #expect(keepalive.aligned(due + .milliseconds(1)) == due + grid)
    }
}
