//! Loading a 10,000-policy document in Rust: `Policies::from_json` (parse, validate,
//! build) against `serde_json::from_str::<Value>` of the same text (parsing only), in the
//! same run. Prints one markdown row. Run by bench/policies/run (`make bench`).

use std::time::Instant;

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: load_policies DOC");
    let text = std::fs::read_to_string(&path).expect("the document");
    assert_eq!(retryrs::Policies::from_json(&text).expect("it loads").len(), 10_001);
    let ours = median_ms(|| drop(retryrs::Policies::from_json(&text).unwrap()));
    let peer = median_ms(|| drop(serde_json::from_str::<serde_json::Value>(&text).unwrap()));
    println!("| Rust | `Policies::from_json` | {ours:.1} | `serde_json::from_str::<Value>` (parse only) | {peer:.1} | {:.2}x |", ours / peer);
}
