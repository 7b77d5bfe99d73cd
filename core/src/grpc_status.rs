//! gRPC status codes as a loaded policy keeps them: a service config's
//! `retryableStatusCodes` (a `retryPolicy`) or `nonFatalStatusCodes` (a `hedgingPolicy`),
//! and the verdict a call's status gets by them ([`StatusCodes::verdict`]): `OK` a
//! success, a listed code a transient (non-fatal) failure, any other a permanent (fatal)
//! one. A host's predicate asks it instead of re-listing the codes, so a config that
//! limits a non-idempotent method to `UNAVAILABLE` is what decides.

use std::fmt;

use crate::engine::Verdict;

/// gRPC's status codes by number, as its service config spells them.
pub const GRPC_STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A status that is no gRPC status code (the text or number given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusError(pub String);

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a gRPC status code; give a name such as \"UNAVAILABLE\" or a number from 0 to {}",
            self.0,
            GRPC_STATUS_NAMES.len() - 1
        )
    }
}

impl std::error::Error for StatusError {}

/// The number of the status `name` (exactly as gRPC spells it) or decimal number text.
pub fn status_code(status: &str) -> Result<u8, StatusError> {
    let by_name = GRPC_STATUS_NAMES.iter().position(|n| *n == status);
    let by_number = status.parse::<u8>().ok().filter(|n| usize::from(*n) < GRPC_STATUS_NAMES.len());
    by_name.map(|n| n as u8).or(by_number).ok_or_else(|| StatusError(format!("{status:?}")))
}

/// A status number, checked.
pub fn status_number(code: u64) -> Result<u8, StatusError> {
    u8::try_from(code)
        .ok()
        .filter(|n| usize::from(*n) < GRPC_STATUS_NAMES.len())
        .ok_or_else(|| StatusError(code.to_string()))
}

/// The codes a gRPC policy retries (or, hedging, lets the other attempts go on after).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatusCodes {
    /// Bit n: status n is listed.
    bits: u32,
    /// Whether they came from a `hedgingPolicy` (`nonFatalStatusCodes`).
    non_fatal: bool,
}

impl StatusCodes {
    /// `retryableStatusCodes` of a `retryPolicy`.
    pub fn retryable(codes: impl IntoIterator<Item = u8>) -> Self {
        StatusCodes { bits: Self::mask(codes), non_fatal: false }
    }

    /// `nonFatalStatusCodes` of a `hedgingPolicy`.
    pub fn non_fatal(codes: impl IntoIterator<Item = u8>) -> Self {
        StatusCodes { bits: Self::mask(codes), non_fatal: true }
    }

    fn mask(codes: impl IntoIterator<Item = u8>) -> u32 {
        codes.into_iter().filter(|c| usize::from(*c) < GRPC_STATUS_NAMES.len()).fold(0, |m, c| m | 1 << c)
    }

    /// The service config's field they came from.
    pub fn field(&self) -> &'static str {
        if self.non_fatal {
            "nonFatalStatusCodes"
        } else {
            "retryableStatusCodes"
        }
    }

    /// The listed codes, by number, ascending.
    pub fn codes(&self) -> impl Iterator<Item = u8> + '_ {
        (0..GRPC_STATUS_NAMES.len() as u8).filter(|c| self.bits & (1 << c) != 0)
    }

    /// The listed codes' names, by number.
    pub fn names(&self) -> Vec<&'static str> {
        self.codes().map(|c| GRPC_STATUS_NAMES[usize::from(c)]).collect()
    }

    /// Whether status `code` is listed.
    pub fn contains(&self, code: u8) -> bool {
        usize::from(code) < GRPC_STATUS_NAMES.len() && self.bits & (1 << code) != 0
    }

    /// The verdict on a call that ended with status `code`: `OK` (0) a success, a listed
    /// code a transient failure (retried; hedging: non-fatal), any other a permanent one.
    pub fn verdict(&self, code: u8) -> Verdict {
        match code {
            0 => Verdict::Success,
            c if self.contains(c) => Verdict::TRANSIENT,
            _ => Verdict::Permanent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_by_name_or_number_and_judge_by_the_list() {
        assert_eq!(status_code("UNAVAILABLE"), Ok(14));
        assert_eq!(status_code("13"), Ok(13));
        assert!(status_code("unavailable").is_err() && status_code("17").is_err() && status_code("").is_err());
        assert_eq!(status_number(16), Ok(16));
        let err = status_number(99).unwrap_err().to_string();
        assert_eq!(err, "99 is not a gRPC status code; give a name such as \"UNAVAILABLE\" or a number from 0 to 16");
        let codes = StatusCodes::retryable([14]);
        assert_eq!(codes.verdict(14), Verdict::TRANSIENT);
        assert_eq!(codes.verdict(13), Verdict::Permanent, "INTERNAL is not listed");
        assert_eq!(codes.verdict(0), Verdict::Success);
        assert_eq!((codes.names(), codes.field()), (vec!["UNAVAILABLE"], "retryableStatusCodes"));
        assert_eq!(StatusCodes::non_fatal([13, 10]).names(), ["ABORTED", "INTERNAL"]);
    }
}
