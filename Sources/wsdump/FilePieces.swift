import Foundation

/// A file read in pieces as they are asked for (`--send-file`): at most one piece is
/// held at a time, whatever the file's size. Each piece is one `read` of a regular file,
/// done on the asking task.
struct FilePieces: AsyncSequence, Sendable {
    static let pieceSize = 64 * 1024

    let path: String

    /// The file's size in bytes, or `nil` if it cannot be read.
    var size: Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(handle: FileHandle(forReadingAtPath: path), path: path)
    }

    struct Iterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        let path: String

        mutating func next() async throws -> Data? {
            guard let handle else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
            let piece = try handle.read(upToCount: FilePieces.pieceSize) ?? Data()
            if piece.isEmpty {
                try? handle.close()
                return nil
            }
            return piece
        }
    }
}
