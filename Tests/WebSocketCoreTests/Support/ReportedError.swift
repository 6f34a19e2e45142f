@testable import WebSocketCore
@testable import WebSocketStreams

/// The `WebSocketError` a parser's failure reaches users as, `nil` for any other error: the
/// parsers throw ``ConnectFailure``, WebSocketStreams reports it.
func reported(_ error: any Error) -> WebSocketError? {
    (error as? ConnectFailure).map(WebSocketError.init)
}

/// The reason of `error` when it has `code`, else `nil`: the tests' stand-in for matching
/// an error kind and binding its reason.
func reason(of error: WebSocketError?, ifCode code: WebSocketError.Code) -> String? {
    guard let error, error.code == code else { return nil }
    return error.reason ?? ""
}
