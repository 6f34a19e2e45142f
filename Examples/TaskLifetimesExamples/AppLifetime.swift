import TaskLifetimes

// MARK: App lifetime: work that starts at launch and runs until shutdown.

/// Ticks for as long as the app runs.
struct Heartbeat: RunUntilCancelled {
    let interval: Duration

    func runUntilCancelled() async {
        for await tick in timer(every: interval) {
            print("[app] heartbeat \(tick)")
        }
        print("[app] heartbeat stopped")
    }
}

/// Logs connectivity changes for as long as the app runs.
struct ConnectivityLogger: RunUntilCancelled {
    let hub: NotificationHub

    func runUntilCancelled() async {
        for await note in hub.notifications(named: "connectivity") {
            print("[app] connectivity: \(note.text)")
        }
        print("[app] connectivity logger stopped")
    }
}

/// The app owns a `TaskBag`: its services live exactly as long as the app.
final class App: Sendable {
    let hub = NotificationHub()
    private let tasks = TaskBag()

    func launch() {
        tasks.addTask { [hub] in
            await runUntilCancelled(
                Heartbeat(interval: .milliseconds(60)),
                ConnectivityLogger(hub: hub)
            )
        }
    }

    func shutDown() {
        tasks.cancel()
    }
}

enum AppLifetimeExample {
    static func run() async {
        print("== App lifetime ==")
        let app = App()
        app.launch()
        await pause(milliseconds: 150)
        app.hub.post(Note(name: "connectivity", text: "offline"))
        await pause(milliseconds: 50)
        app.hub.post(Note(name: "connectivity", text: "online"))
        await pause(milliseconds: 50)
        app.shutDown()
        await pause(milliseconds: 50)
        print("[app] listeners left after shutdown: \(app.hub.subscriberCount)")
    }
}
