//! What knobgen writes: a whole file, or a region of a hand-written file between two
//! marker lines (`... knobgen:begin ID` and `... knobgen:end ID`, in the file's own
//! comment syntax), which it replaces and leaves the rest alone.

/// A check of a whole file's new text against the one on disk: `Err` says why the new
/// one may not replace it.
pub type Keeps = fn(&str, &str) -> Result<(), String>;

pub enum Output {
    /// A whole file; `keeps`, if any, refuses a new text that breaks a promise the
    /// committed one made (C's layout only appends).
    File {
        path: &'static str,
        text: String,
        keeps: Option<Keeps>,
    },
    Region {
        path: &'static str,
        id: &'static str,
        text: String,
    },
}

impl Output {
    pub fn path(&self) -> &'static str {
        match self {
            Output::File { path, .. } | Output::Region { path, .. } => path,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Output::File { path, .. } => path.to_string(),
            Output::Region { path, id, .. } => format!("{path} (region {id})"),
        }
    }

    /// The file's text with this output in place.
    pub fn apply(&self, file: &str) -> Result<String, String> {
        match self {
            Output::File { text, keeps, .. } => {
                if let Some(keeps) = keeps {
                    keeps(file, text)?;
                }
                Ok(text.clone())
            }
            Output::Region { id, text, .. } => {
                let begin = format!("knobgen:begin {id}");
                let end = format!("knobgen:end {id}");
                let lines: Vec<&str> = file.split_inclusive('\n').collect();
                let find = |marker: &str| {
                    let mut at = lines.iter().enumerate().filter(|(_, l)| l.trim_end().ends_with(marker));
                    match (at.next(), at.next()) {
                        (Some((i, _)), None) => Ok(i),
                        (None, _) => Err(format!("no line ends with `{marker}`")),
                        (Some(_), Some(_)) => Err(format!("`{marker}` is there twice")),
                    }
                };
                let (b, e) = (find(&begin)?, find(&end)?);
                if e < b {
                    return Err(format!("`{end}` comes before `{begin}`"));
                }
                // The region takes the file's line ending (the begin line's), so a CRLF
                // file stays CRLF throughout instead of gaining LF lines.
                let text = match lines[b] {
                    l if l.ends_with("\r\n") => text.replace('\n', "\r\n"),
                    l if l.ends_with('\n') => text.clone(),
                    _ => return Err(format!("`{begin}` is the last line (its region needs the lines after it)")),
                };
                Ok(format!("{}{text}{}", lines[..=b].concat(), lines[e..].concat()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_replaces_only_what_is_between_its_markers() {
        let out = Output::Region { path: "x", id: "opts", text: "new\n".into() };
        let file = "a\n  # knobgen:begin opts\nold\nold\n  # knobgen:end opts\nb\n";
        assert_eq!(out.apply(file).unwrap(), "a\n  # knobgen:begin opts\nnew\n  # knobgen:end opts\nb\n");
        assert!(out.apply("a\n# knobgen:begin opts\n").unwrap_err().contains("knobgen:end opts"));
        let twice = "# knobgen:begin opts\n# knobgen:end opts\n# knobgen:begin opts\n";
        assert!(out.apply(twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn a_crlf_file_stays_crlf_and_odd_markers_are_errors_not_edits() {
        let out = Output::Region { path: "x", id: "opts", text: "new\nnewer\n".into() };
        let crlf = "a\r\n# knobgen:begin opts\r\nold\r\n# knobgen:end opts\r\nb\r\n";
        let once = out.apply(crlf).unwrap();
        assert_eq!(once, "a\r\n# knobgen:begin opts\r\nnew\r\nnewer\r\n# knobgen:end opts\r\nb\r\n");
        assert_eq!(out.apply(&once).unwrap(), once, "idempotent");
        // A marker quoted mid-line (in a string, in prose) is not a marker.
        let quoted = "s = \"knobgen:begin opts\" + x\n# knobgen:begin opts\nold\n# knobgen:end opts\n";
        assert_eq!(
            out.apply(quoted).unwrap(),
            "s = \"knobgen:begin opts\" + x\n# knobgen:begin opts\nnew\nnewer\n# knobgen:end opts\n"
        );
        // One that ends a line twice, or ends before it begins, or begins on the last line
        // with no newline: refused, the file untouched.
        let twice = "x = '# knobgen:begin opts'\n# knobgen:begin opts\n# knobgen:end opts\n";
        assert!(out.apply(twice).is_ok(), "a quote closing the line is not the marker");
        let doubled = "# knobgen:begin opts\n// knobgen:begin opts\n# knobgen:end opts\n";
        assert!(out.apply(doubled).unwrap_err().contains("twice"));
        let reversed = "# knobgen:end opts\n# knobgen:begin opts\n";
        assert!(out.apply(reversed).unwrap_err().contains("comes before"));
        let no_newline = "# knobgen:end opts\n# knobgen:begin opts";
        assert!(out.apply(no_newline).is_err());
        let missing = "nothing here\n";
        assert!(out.apply(missing).unwrap_err().contains("knobgen:begin opts"));
    }
}
