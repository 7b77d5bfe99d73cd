//! Wording shared by every host's rendering: sentences from the table's lines, defaults,
//! and doc comments wrapped to the line width the repository keeps.

use retryrs::knob::{Default, Knob};
use retryrs::units::compact;

/// The table's doc line as a sentence start (capitalised).
pub fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// The knob's default number in `scale` units of the core's (1000 turns ms into seconds).
pub fn default_number(k: &Knob, scale: f64) -> Option<f64> {
    match k.default {
        Default::Number(n) => Some(n / scale),
        _ => None,
    }
}

/// A number as a reader writes it: `5`, `0.2`, `5000`.
pub fn number(n: f64) -> String {
    compact(n)
}

/// A number as Python's repr writes a float: `2.0`, `0.2`.
pub fn py_float(n: f64) -> String {
    format!("{n:?}")
}

/// `text` as `//`-style comment lines (`lead` is e.g. `    /// `), wrapped at 92 columns
/// so rustfmt, tsc and readers leave it alone.
pub fn comment(lead: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && lead.len() + line.len() + 1 + word.len() > 92 {
            out.push_str(&format!("{lead}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&format!("{lead}{line}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_wrap_at_92_columns_and_keep_every_word() {
        let text = "word ".repeat(60);
        let out = comment("    /// ", text.trim());
        assert!(out.lines().all(|l| l.len() <= 92 && l.starts_with("    /// ")));
        assert_eq!(out.matches("word").count(), 60);
        assert_eq!(sentence("total calls"), "Total calls");
        assert_eq!(py_float(0.2), "0.2");
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(number(5000.0), "5000");
    }
}
