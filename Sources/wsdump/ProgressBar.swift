/// The upload progress line `--file` draws on a terminal, e.g.
/// `upload [##########----------]  50%  1.0 MiB / 2.0 MiB`.
enum ProgressBar {
    /// Cells in the bar.
    static let cells = 20

    /// The line for `done` of `total` bytes.
    static func render(done: Int, total: Int) -> String {
        let fraction = total > 0 ? min(1, max(0, Double(done) / Double(total))) : 1
        let filled = Int((fraction * Double(cells)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: cells - filled)
        let percent = String(Int((fraction * 100).rounded(.down)))
        let paddedPercent = String(repeating: " ", count: max(0, 3 - percent.count)) + percent
        return "upload [\(bar)] \(paddedPercent)%  \(byteSize(done)) / \(byteSize(total))"
    }

    /// `512 B`, `1.5 KiB`, `2.0 MiB`, `1.1 GiB`.
    static func byteSize(_ count: Int) -> String {
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count)
        for unit in ["KiB", "MiB", "GiB"] {
            value /= 1024
            if value < 1024 || unit == "GiB" {
                let tenths = Int((value * 10).rounded())
                return "\(tenths / 10).\(tenths % 10) \(unit)"
            }
        }
        return "\(count) B"
    }
}
