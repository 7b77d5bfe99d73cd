//! What knobgen writes: a whole file, or a region of a hand-written file between two
//! marker lines (`... knobgen:begin ID` and `... knobgen:end ID`, in the file's own
//! comment syntax), which it replaces and leaves the rest alone.

pub enum Output {
    File { path: &'static str, text: String },
    Region { path: &'static str, id: &'static str, text: String },
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
            Output::File { text, .. } => Ok(text.clone()),
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
}
