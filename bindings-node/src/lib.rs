//! Node binding of retryrs (being written).
