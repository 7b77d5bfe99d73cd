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
