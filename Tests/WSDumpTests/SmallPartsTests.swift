import Foundation
import Testing
import WebSocketStreams
@testable import wsdump

@Suite("Exit status, colors and progress")
struct SmallPartsTests {
    @Test func exitStatusForEndings() {
        #expect(ExitStatus.forEnd(code: .normalClosure, error: nil) == .normalClose)
        #expect(ExitStatus.forEnd(code: .goingAway, error: nil) == .normalClose)
        #expect(ExitStatus.forEnd(code: 4001, error: nil) == .closedWithError)
        #expect(ExitStatus.forEnd(code: 4001, error: nil, requestedCode: 4001) == .normalClose)
        #expect(ExitStatus.forEnd(code: .abnormalClosure, error: nil) == .closedWithError)
        #expect(ExitStatus.forEnd(code: .abnormalClosure, error: .pongTimeout) == .closedWithError)
        #expect(ExitStatus.forFailure(.connectionFailed("refused")) == .connectionFailed)
        #expect(ExitStatus.forFailure(.handshakeRejected(status: 401, headers: [:], body: Data())) == .connectionFailed)
        #expect(ExitStatus.forFailure(.invalidConfiguration("x")) == .usageError)
        #expect(ExitStatus.forFailure(.closed(code: 1008, reason: "")) == .closedWithError)
        #expect(ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
    }

    @Test func colorsOnlyOnTerminalsWithoutNoColor() {
        #expect(Palette.colorsWanted(isTerminal: true, environment: [:]))
        #expect(!Palette.colorsWanted(isTerminal: false, environment: [:]))
        #expect(!Palette.colorsWanted(isTerminal: true, environment: ["NO_COLOR": ""]))
        #expect(!Palette.colorsWanted(isTerminal: true, environment: ["TERM": "dumb"]))
        #expect(Palette(isEnabled: true).received("hi") == "\u{1B}[32mhi\u{1B}[0m")
        #expect(Palette(isEnabled: false).error("hi") == "hi")
    }

    @Test func progressBar() {
        #expect(ProgressBar.render(done: 0, total: 2048) == "upload [--------------------]   0%  0 B / 2.0 KiB")
        #expect(ProgressBar.render(done: 1 << 20, total: 2 << 20) == "upload [##########----------]  50%  1.0 MiB / 2.0 MiB")
        #expect(ProgressBar.render(done: 5, total: 5) == "upload [####################] 100%  5 B / 5 B")
        #expect(ProgressBar.byteSize(3 << 30) == "3.0 GiB")
    }
}
