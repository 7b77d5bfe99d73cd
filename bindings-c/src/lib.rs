//! C ABI for retryrs (being written).
