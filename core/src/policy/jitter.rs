//! How randomness is mixed into each backoff delay ([`Jitter`]): its kinds, its canonical
//! spelling and the spellings it reads back.

use std::fmt;
use std::str::FromStr;

use crate::knob::Rule;

use super::{Given, PolicyError};

/// How randomness is mixed into each backoff delay. See `docs/contract.md`, "Delays".
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Jitter {
    /// Exactly the ceiling: every client that failed together retries together.
    None,
    /// Uniform in `[0, ceiling]` (the AWS "full jitter").
    Full,
    /// `ceiling/2` plus uniform in `[0, ceiling/2]`.
    Equal,
    /// Uniform in `[ceiling*(1-f), ceiling*(1+f)]`, then capped at `max_delay`; `f` in `[0, 1]`.
    Proportional(f64),
    /// `min(max_delay, uniform in [initial_delay, 3 * previous delay])` (the AWS formula).
    Decorrelated,
}

impl Jitter {
    /// The canonical spelling, the one [`Jitter::from_str`] reads back.
    pub fn spelling(&self) -> String {
        match self {
            Jitter::None => "none".into(),
            Jitter::Full => "full".into(),
            Jitter::Equal => "equal".into(),
            Jitter::Proportional(f) => format!("proportional({f})"),
            Jitter::Decorrelated => "decorrelated".into(),
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelling())
    }
}

impl FromStr for Jitter {
    type Err = PolicyError;

    /// Reads `none`, `full`, `equal`, `decorrelated`, and `proportional(F)` or
    /// `proportional:F` with F in `[0, 1]`. Case and surrounding spaces do not matter.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        let bad = || PolicyError::new("jitter", Rule::Jitter, Given::Text(s.to_string()));
        match text.as_str() {
            "none" => return Ok(Jitter::None),
            "full" => return Ok(Jitter::Full),
            "equal" => return Ok(Jitter::Equal),
            "decorrelated" => return Ok(Jitter::Decorrelated),
            _ => {}
        }
        let factor = text
            .strip_prefix("proportional(")
            .and_then(|rest| rest.strip_suffix(')'))
            .or_else(|| text.strip_prefix("proportional:"))
            .ok_or_else(bad)?;
        let f: f64 = factor.trim().parse().map_err(|_| bad())?;
        check_factor(f)?;
        Ok(Jitter::Proportional(f))
    }
}

pub(super) fn check_factor(f: f64) -> Result<(), PolicyError> {
    if f.is_finite() && (0.0..=1.0).contains(&f) {
        Ok(())
    } else {
        Err(PolicyError::new("jitter", Rule::Jitter, Given::Text(format!("proportional({f})"))))
    }
}
