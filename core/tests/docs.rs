//! Documentation that states the core's lists: kept equal to them by test.

use std::path::Path;

use retryrs::ExhaustReason;

#[test]
fn the_observability_guide_lists_every_exhausted_reason() {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/observability.md")).unwrap();
    let row = guide.lines().find(|l| l.starts_with("| `retryrs.exhausted.reason`")).expect("the reason row");
    let values = row.split('|').nth(3).unwrap();
    let listed = values.split_once(" (").map_or(values, |(list, _)| list);
    let mut named: Vec<&str> = listed.split(',').map(|v| v.trim().trim_matches('`')).collect();
    let mut core: Vec<&str> = ExhaustReason::ALL.iter().map(ExhaustReason::as_str).collect();
    named.sort_unstable();
    core.sort_unstable();
    assert_eq!(named, core, "docs/observability.md: {row}");
}

#[test]
fn the_readme_lists_every_event_kind() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    // The Events bullet of "What every host does": its first line and its indented rest.
    let start = readme.find("\n- **Events**").expect("README: the Events bullet") + 1;
    let bullet: String = readme[start..]
        .lines()
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with("  "))
        .map(|(_, l)| l)
        .collect::<Vec<_>>()
        .join(" ");
    let mut named: Vec<&str> = bullet.split('`').skip(1).step_by(2).collect();
    let mut core: Vec<&str> = retryrs::EventKind::ALL.iter().map(|k| k.as_str()).collect();
    named.sort_unstable();
    core.sort_unstable();
    assert_eq!(named, core, "README.md's Events bullet names exactly the core's event kinds: {bullet}");
}
