/// The libpq settings sync adds to a connection string that does not set them: a bounded connect, and
/// TCP keepalives and a user timeout so that a cut network is noticed in seconds, not minutes.
enum ConnectionDefaults {
    static let values = [
        "connect_timeout": "5", "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
        "keepalives_count": "3", "tcp_user_timeout": "10000", "application_name": "lode-sync",
    ]
}
