//! The error with a boxed source both bench/rust and examples/one_case measure.

/// An error as applications write them: a message and a boxed source (what issue 36
/// measured 2.47x backon with, where the zero-sized `Busy` gives 1.2x).
#[derive(Debug)]
pub struct Wrapped {
    #[allow(dead_code)] // (read through Debug only)
    what: &'static str,
    #[allow(dead_code)]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Wrapped {
    pub fn new() -> Self {
        Wrapped { what: "busy", source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)) }
    }
}
