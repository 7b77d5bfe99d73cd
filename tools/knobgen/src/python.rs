//! Python: the knob parts of `_native.pyi` (Retrier's options and properties, Policy's
//! properties), and Retrier's runtime signature (pyo3 takes it as a literal) and
//! getters (pyo3 getters keep attribute lookup generic, see retrier.rs).
//! Python speaks seconds and snake_case, `None` for off.

use retryrs::knob::{Default, Knob, Unit, KNOBS};

use crate::output::Output;
use crate::spell::{comment, default_number, py_float, sentence};

const STUB: &str = "bindings-python/python/retryrs/_native.pyi";
const RETRIER: &str = "bindings-python/src/retrier.rs";

pub fn outputs() -> Vec<Output> {
    vec![
        Output::Region { path: STUB, id: "retrier-options", text: KNOBS.iter().map(option).collect() },
        Output::Region { path: STUB, id: "retrier-knobs", text: KNOBS.iter().map(property).collect() },
        Output::Region { path: STUB, id: "policy-knobs", text: KNOBS.iter().map(property).collect() },
        Output::Region { path: RETRIER, id: "signature", text: signature() },
        Output::Region { path: RETRIER, id: "docstring", text: KNOBS.iter().map(docstring).collect() },
        Output::Region { path: RETRIER, id: "getters", text: KNOBS.iter().map(getter).collect() },
    ]
}

/// The stub type of `k` as an option (`as_option`) or as it reads back.
fn stub_type(k: &Knob, as_option: bool) -> String {
    let ty = match k.unit {
        Unit::Count | Unit::Seed => "int",
        Unit::Duration if as_option => "Seconds",
        Unit::Duration | Unit::Factor => "float",
        Unit::Jitter | Unit::Text => "str",
        Unit::Budget => "RetryBudget",
    };
    if k.can_be_off {
        format!("Optional[{ty}]")
    } else {
        ty.to_string()
    }
}

/// `k`'s default as Python source, strings quoted with `quote`.
fn default(k: &Knob, quote: char) -> String {
    match (k.default, k.unit) {
        (Default::Number(n), Unit::Count) => format!("{n}"),
        (Default::Number(_), _) => py_float(default_number(k, scale(k)).unwrap_or(0.0)),
        (Default::Text(t), _) => format!("{quote}{t}{quote}"),
        (Default::Off, _) => "None".into(),
    }
}

/// Core units per Python unit: seconds for durations.
fn scale(k: &Knob) -> f64 {
    if k.unit == Unit::Duration {
        1000.0
    } else {
        1.0
    }
}

fn describe(k: &Knob) -> String {
    let unit = if k.unit == Unit::Duration { ", in seconds" } else { "" };
    let off = if k.can_be_off { format!("; None: {}", k.off_means) } else { String::new() };
    format!("{}{unit}{off}.", sentence(k.doc))
}

fn option(k: &Knob) -> String {
    comment("        # ", &describe(k))
        + &format!("        {}: {} = {},\n", k.name, stub_type(k, true), default(k, '"'))
}

/// `k`'s entry in `Retrier`'s docstring (what `help(retryrs.Retrier)` lists): name,
/// type, default and meaning, as Rust doc lines pyo3 turns into the class's `__doc__`.
fn docstring(k: &Knob) -> String {
    // The type as it reads back (`float` for seconds: `Seconds` is the stub's alias).
    let head = format!("{} ({}, default {}): {}", k.name, stub_type(k, false), default(k, '\''), describe(k));
    // Continuation lines indented under the name, as numpydoc and help() lay them out.
    comment("///     ", &head).replacen("///     ", "/// ", 1)
}

fn property(k: &Knob) -> String {
    format!("    @property\n    def {}(self) -> {}: ...\n", k.name, stub_type(k, false))
}

/// Python's own options, around the knobs, as `Retrier.__new__` takes them (checked
/// against options.rs's HOST_ONLY by tests/test_knobs.py).
const BEFORE: &[&str] = &["retry_on=None"];
const AFTER: &[&str] = &[
    "retry_after=None",
    "retry_on_result=None",
    "on_event=None",
    "breaker=None",
    "reraise=False",
    "wait=None",
    "before_sleep=None",
];

fn signature() -> String {
    let knobs = KNOBS.iter().map(|k| format!("{}={}", k.name, default(k, '\'')));
    let params: Vec<String> =
        BEFORE.iter().map(|s| s.to_string()).chain(knobs).chain(AFTER.iter().map(|s| s.to_string())).collect();
    format!("    #[pyo3(signature = (**options), text_signature = \"(*, {})\")]\n", params.join(", "))
}

/// A pyo3 getter of `Retrier` for `k` (a getter, not `__getattr__`: see retrier.rs).
fn getter(k: &Knob) -> String {
    let n = k.name;
    format!("    #[getter]\n    fn {n}(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {{\n        self.knob(py, \"{n}\")\n    }}\n")
}
