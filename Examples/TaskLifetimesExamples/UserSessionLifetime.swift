import TaskLifetimes

// MARK: User-session lifetime: work that restarts on login and logout.

struct User: Sendable, Identifiable {
    let id: String
    let name: String
}

/// Syncs the user's inbox every so often, until the session ends.
struct InboxSync: RunUntilCancelled {
    let user: User

    func runUntilCancelled() async {
        for await tick in timer(every: .milliseconds(80)) {
            print("[session] \(user.name): inbox sync #\(tick)")
        }
    }
}

/// Shows the messages sent to the user, until the session ends.
struct MessageListener: RunUntilCancelled {
    let user: User
    let hub: NotificationHub

    func runUntilCancelled() async {
        for await note in hub.notifications(named: "message.\(user.id)") {
            print("[session] \(user.name): new message \"\(note.text)\"")
        }
    }
}

/// Everything that lives for one logged-in user.
struct UserSession: RunUntilCancelled {
    let user: User
    let hub: NotificationHub

    func runUntilCancelled() async {
        print("[session] \(user.name): started")
        await TaskLifetimes.runUntilCancelled(
            InboxSync(user: user),
            MessageListener(user: user, hub: hub)
        )
        print("[session] \(user.name): cleaned up")
    }
}

/// Restarts the session whenever the logged-in user changes.
final class SessionController: Sendable {
    let hub: NotificationHub
    private let session = TaskScope<User.ID?>()

    init(hub: NotificationHub) {
        self.hub = hub
    }

    func userDidChange(to user: User?) async {
        await session.task(id: user?.id) { [hub] in
            guard let user else {
                print("[session] logged out")
                return
            }
            await UserSession(user: user, hub: hub).runUntilCancelled()
        }
    }

    func end() async {
        await session.cancel()
    }
}

enum UserSessionLifetimeExample {
    static func run() async {
        print("== User-session lifetime ==")
        let hub = NotificationHub()
        let controller = SessionController(hub: hub)
        let alice = User(id: "u1", name: "Alice")
        let bob = User(id: "u2", name: "Bob")

        await controller.userDidChange(to: alice)
        await pause(milliseconds: 100)
        hub.post(Note(name: "message.u1", text: "Hi Alice"))
        await pause(milliseconds: 80)
        await controller.userDidChange(to: alice)  // Same user: nothing happens.
        await controller.userDidChange(to: bob)  // Alice's session ends before Bob's starts.
        await pause(milliseconds: 100)
        hub.post(Note(name: "message.u1", text: "Alice is gone; nobody hears this"))
        hub.post(Note(name: "message.u2", text: "Hi Bob"))
        await pause(milliseconds: 80)
        await controller.userDidChange(to: nil)
        await controller.end()
    }
}
