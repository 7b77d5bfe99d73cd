//! Node: the knob parts of `index.d.ts` (RetrierOptions' members, Policy's readonly
//! fields). Node speaks camelCase with `Ms` on durations, milliseconds, `null` for off.

use retryrs::knob::{Default, Knob, Unit, KNOBS};

use crate::output::Output;
use crate::spell::{comment, number, sentence};

const TYPES: &str = "bindings-node/index.d.ts";

pub fn outputs() -> Vec<Output> {
    vec![
        Output::Region { path: TYPES, id: "retrier-options", text: KNOBS.iter().map(option).collect() },
        Output::Region { path: TYPES, id: "policy-knobs", text: KNOBS.iter().map(field).collect() },
    ]
}

/// The declared type of `k` as an option (`as_option`) or as a policy reads it back.
fn ts_type(k: &Knob, as_option: bool) -> String {
    let ty = match k.unit {
        Unit::Count | Unit::Duration | Unit::Factor => "number",
        Unit::Jitter => "Jitter",
        Unit::Text => "string",
        Unit::Seed if as_option => "number | bigint",
        Unit::Seed => "bigint",
        Unit::Budget if as_option => "RetryBudget | SharedRetryBudget",
        Unit::Budget => "RetryBudget",
    };
    if k.can_be_off {
        format!("{ty} | null")
    } else {
        ty.to_string()
    }
}

fn option(k: &Knob) -> String {
    let unit = if k.unit == Unit::Duration { ", in ms" } else { "" };
    let off = if k.can_be_off { format!("; null: {}", k.off_means) } else { String::new() };
    let default = match k.default {
        Default::Number(n) => number(n),
        Default::Text(t) => format!("'{t}'"),
        Default::Off => "null".into(),
    };
    jsdoc(&format!("{}{unit}{off}. Default {default}.", sentence(k.doc)))
        + &format!("  {}?: {};\n", k.camel_ms(), ts_type(k, true))
}

fn field(k: &Knob) -> String {
    let unit = if k.unit == Unit::Duration { ", in ms" } else { "" };
    let off = if k.can_be_off { "; null when off" } else { "" };
    jsdoc(&format!("{}{unit}{off}.", sentence(k.doc)))
        + &format!("  readonly {}: {};\n", k.camel_ms(), ts_type(k, false))
}

/// A `/** ... */` comment at member indentation: one line when it fits.
fn jsdoc(text: &str) -> String {
    let one = format!("  /** {text} */\n");
    if one.len() <= 101 {
        one
    } else {
        format!("  /**\n{}   */\n", comment("   * ", text))
    }
}
