import CSystemd

/// sd_notify(3): READY/RELOADING/STOPPING/WATCHDOG for `Type=notify`. A no-op when not
/// started by systemd (NOTIFY_SOCKET unset), so the same binary runs anywhere.
public enum SystemdNotifier {
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
