/// The `sha256/` pins of a server's chain for `-v`, each with its role, in the form
/// `--pin` takes.
enum CertificatePins {
    /// `leaf sha256/…, intermediate CA sha256/…, CA sha256/…` (leaf first); `none` when empty.
    static func describe(_ pins: [String]) -> String {
        guard !pins.isEmpty else { return "none" }
        return pins.enumerated().map { index, pin in
            let role = index == 0 ? "leaf" : index == pins.count - 1 ? "CA" : "intermediate CA"
            return "\(role) \(pin)"
        }.joined(separator: ", ")
    }
}
