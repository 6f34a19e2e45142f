import TaskLifetimes

// MARK: Screen lifetime: work that runs while a screen is open.

/// A screen owns a `TaskBag`; closing (releasing) the screen cancels its work.
final class ChatScreen: Sendable {
    let room: String
    private let tasks = TaskBag()

    init(room: String, hub: NotificationHub) {
        self.room = room
        print("[screen] #\(room) opened")
        tasks.addTask {
            for await note in hub.notifications(named: "message.\(room)") {
                print("[screen] #\(room) shows \"\(note.text)\"")
            }
            print("[screen] #\(room) stopped listening")
        }
    }

    deinit {
        print("[screen] #\(room) closed")
    }
}

enum ScreenLifetimeExample {
    static func run() async {
        print("== Screen lifetime ==")
        let hub = NotificationHub()
        var screen: ChatScreen? = ChatScreen(room: "general", hub: hub)
        await pause(milliseconds: 50)
        hub.post(Note(name: "message.general", text: "Welcome!"))
        await pause(milliseconds: 50)
        screen = nil  // The user navigates away.
        await pause(milliseconds: 50)
        print("[screen] screen released: \(screen == nil), listeners left: \(hub.subscriberCount)")
    }
}
