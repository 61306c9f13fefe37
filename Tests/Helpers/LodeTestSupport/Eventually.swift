import Foundation

/// Waits until `condition` holds, polling; false when `seconds` pass first.
public func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return try condition()
}

/// Waits until `condition` holds without blocking a thread of the cooperative pool (the consumers
/// under test may need it); false when `seconds` pass first.
public func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        try? await _Concurrency.Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}
