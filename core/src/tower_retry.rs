//! tower
