//! Python binding of retryrs (being written).
