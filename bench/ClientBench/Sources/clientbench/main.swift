// Top-level code is main-actor isolated in Swift 6; keep it to one call into a
// nonisolated entry point so the library's callbacks never touch main-actor state.
ClientBench.main()
