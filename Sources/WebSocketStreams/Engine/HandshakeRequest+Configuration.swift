import WebSocketCore

extension HandshakeRequest {
    /// The upgrade request a connection with `configuration` sends: its headers (with the
    /// URL's basic authorization), subprotocols, origin and deflate offer.
    init(url: WebSocketURL, configuration: WebSocketConfiguration, keyBytes: [UInt8]) {
        self.init(
            url: url,
            headers: Self.serverHeaders(url: url, configuration: configuration)
                .sorted(by: { $0.key < $1.key }).map { (name: $0.key, value: $0.value) },
            subprotocols: configuration.subprotocols, origin: configuration.origin,
            extensionOffer: configuration.compression.isEnabled ? DeflateOffer(configuration.compression).headerValue : nil,
            keyBytes: keyBytes)
    }

    /// The configured headers that go to the server: `Proxy-Authorization` is the proxy's (it
    /// goes on CONNECT, ``ProxyAddress/connectRequest(to:proxyAuthorization:)``), and the
    /// URL's user info becomes `Authorization` unless one is configured.
    static func serverHeaders(url: WebSocketURL, configuration: WebSocketConfiguration) -> [String: String] {
        var headers = configuration.headers.filter { $0.key.lowercased() != "proxy-authorization" }
        if let authorization = url.basicAuthorization, !headers.keys.contains(where: { $0.lowercased() == "authorization" }) {
            headers["Authorization"] = authorization
        }
        return headers
    }
}
