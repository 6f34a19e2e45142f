import TaskLifetimes

// MARK: Feature lifetime: work that runs while a feature is switched on.

enum Feature: String, Hashable, Sendable {
    case liveLocation = "live location"
    case typingIndicator = "typing indicator"
}

/// Shares the location every so often, until the feature is switched off.
struct LiveLocationSharing: RunUntilCancelled {
    func runUntilCancelled() async {
        for await tick in timer(every: .milliseconds(50)) {
            print("[feature] sharing location #\(tick)")
        }
        print("[feature] location sharing stopped")
    }
}

/// Shows "typing..." for a moment: this feature finishes on its own.
struct TypingIndicator: RunUntilCancelled {
    func runUntilCancelled() async {
        print("[feature] typing...")
        for await _ in timer(every: .milliseconds(60)) { break }
        print("[feature] typing indicator hidden")
    }
}

/// One task per switched-on feature; switching a running feature on again is ignored.
final class FeatureSwitches: Sendable {
    private let running = IdentifiableTaskBag<Feature>()

    @discardableResult
    func switchOn(_ feature: Feature) -> Bool {
        running.startTask(id: feature) {
            switch feature {
            case .liveLocation: await LiveLocationSharing().runUntilCancelled()
            case .typingIndicator: await TypingIndicator().runUntilCancelled()
            }
        }
    }

    func switchOff(_ feature: Feature) {
        running.cancel(id: feature)
    }

    func isOn(_ feature: Feature) -> Bool {
        running.isRunning(id: feature)
    }
}

enum FeatureLifetimeExample {
    static func run() async {
        print("== Feature lifetime ==")
        let features = FeatureSwitches()
        print("[feature] switch on live location: \(features.switchOn(.liveLocation))")
        print("[feature] switch on live location again: \(features.switchOn(.liveLocation))")
        features.switchOn(.typingIndicator)
        await pause(milliseconds: 130)
        print("[feature] typing indicator still on: \(features.isOn(.typingIndicator))")
        features.switchOff(.liveLocation)
        await pause(milliseconds: 30)
        print("[feature] live location still on: \(features.isOn(.liveLocation))")
    }
}
