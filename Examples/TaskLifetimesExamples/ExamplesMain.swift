/// Runs each lifetime example briefly, one after the other, and exits.
///
/// The short sleeps only simulate time passing in an app; nothing relies on them
/// for correctness.
@main
struct ExamplesMain {
    static func main() async {
        await AppLifetimeExample.run()
        await UserSessionLifetimeExample.run()
        await ScreenLifetimeExample.run()
        await FeatureLifetimeExample.run()
        print("All lifetime examples finished.")
    }
}

/// Lets simulated time pass.
func pause(milliseconds: Int) async {
    try? await Task.sleep(for: .milliseconds(milliseconds))
}
