// Top-level code is main-actor isolated in Swift 6; everything runs from a nonisolated type.
ClientTool.main()
