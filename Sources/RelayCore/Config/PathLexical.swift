/// Path arithmetic on strings alone, so the pure parser can compare include paths.
enum PathLexical {
    /// Removes empty and `.` components and folds `dir/..`; keeps a leading `/`.
    /// Symlinks are not followed: a symlink cycle ends at the include depth limit instead.
    static func normalize(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".":
                continue
            case "..":
                if let last = parts.last, last != ".." {
                    parts.removeLast()
                } else if !absolute {
                    parts.append(part)
                }
            default:
                parts.append(part)
            }
        }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// The directory part of `path`; nil when it has none (a bare file name).
    static func directory(of path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// `pattern` if absolute, else `pattern` relative to the directory of `including`.
    static func resolve(_ pattern: String, relativeTo including: String) -> String {
        if pattern.hasPrefix("/") { return pattern }
        guard let directory = directory(of: including) else { return pattern }
        return directory == "/" ? "/" + pattern : directory + "/" + pattern
    }
}
