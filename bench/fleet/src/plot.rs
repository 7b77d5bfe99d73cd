//! The SVG plots: one line and one colour per policy, axes with units, a legend.

use std::path::Path;

use plotters::prelude::*;

use crate::contention::Strategy;
use crate::herd::WINDOW_MS;
use crate::outage::{World, BIN_MS};
use crate::sim::Results;

type Failure = Box<dyn std::error::Error>;

/// Distinct colours (the Tableau 10 palette, then five more), one per line.
const COLOURS: [RGBColor; 15] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(127, 127, 127),
    RGBColor(0, 0, 0),
    RGBColor(174, 199, 232),
    RGBColor(255, 152, 150),
    RGBColor(152, 223, 138),
    RGBColor(197, 176, 213),
];

const SIZE: (u32, u32) = (1000, 540);
const LEGEND_WIDTH: u32 = 230;
const SHADE: RGBColor = RGBColor(225, 225, 225);

/// A tick label: 20, 2.5, 40k, 1.5M (no trailing ".0").
fn tick(v: f64) -> String {
    let (value, unit) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// Writes every plot into `dir`.
pub fn write_all(r: &Results, dir: &Path) -> Result<(), Failure> {
    let n: Vec<f64> = r.sweep.iter().map(|(n, _)| *n as f64).collect();
    let per_strategy = |f: &dyn Fn(&crate::contention::Outcome) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        Strategy::ALL
            .iter()
            .enumerate()
            .map(|(i, s)| (s.label().to_string(), r.sweep.iter().zip(&n).map(|((_, o), x)| (*x, f(&o[i]))).collect()))
            .collect()
    };
    lines(
        &dir.join("contention_calls.svg"),
        "Contention: writes until every client has updated the row",
        ("clients racing (N)", "calls (writes received)"),
        &per_strategy(&|o| o.calls),
        false,
        None,
    )?;
    lines(
        &dir.join("contention_time.svg"),
        "Contention: time until the last client's update lands",
        ("clients racing (N)", "completion time (s, log scale)"),
        &per_strategy(&|o| o.completion_ms / 1000.0),
        true,
        None,
    )?;
    outage(&dir.join("outage.svg"), "Outage (30 s) then recovery to full capacity", &r.config.outage, &r.outage)?;
    outage(
        &dir.join("outage_half.svg"),
        "Outage (30 s) then recovery to half capacity",
        &r.config.outage_half,
        &r.outage_half,
    )?;
    outage(&dir.join("flapping.svg"), "A flapping dependency: down 5 s, up 5 s", &r.config.flapping, &r.flapping)?;
    let herd: Vec<(String, Vec<(f64, f64)>)> = r
        .herd
        .iter()
        .map(|(j, windows)| {
            let points = windows
                .iter()
                .enumerate()
                .map(|(i, v)| ((i as u64 * WINDOW_MS) as f64 / 1000.0, *v as f64))
                .take_while(|(x, _)| *x <= 4.0)
                .collect();
            (format!("jitter {}", j.spelling()), points)
        })
        .collect();
    tail(r, dir)?;
    lines(
        &dir.join("herd.svg"),
        "The herd: 1,000 clients fail at t = 0 and retry",
        ("time since the failure (s)", "retries per 10 ms window"),
        &herd,
        false,
        None,
    )
}

/// The tail: each peer's user-request latency by percentile (x in nines: 1 = p90, 2 =
/// p99, 3 = p99.9), and the overload: attempts sent per call offered, over time.
fn tail(r: &Results, dir: &Path) -> Result<(), Failure> {
    let series: Vec<(String, Vec<(f64, f64)>)> = r
        .tail
        .iter()
        .map(|run| {
            let n = run.sorted_ms.len();
            let points = (0..=60)
                .map(|i| f64::from(i) * 0.05)
                .map(|nines| {
                    let q = 1.0 - 10f64.powf(-nines);
                    (nines, run.sorted_ms[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
                })
                .take_while(|(_, ms)| ms.is_finite())
                .collect();
            (run.peer.short(), points)
        })
        .collect();
    lines(
        &dir.join("tail.svg"),
        "The tail at scale: a fan-out of 100, 1% of requests 50-100x slower",
        ("percentile, in nines (1 = p90, 2 = p99, 3 = p99.9)", "user request latency (ms, log scale)"),
        &series,
        true,
        None,
    )?;
    let world = &r.config.overload;
    let bin_s = crate::tail::OVERLOAD_BIN_MS as f64 / 1000.0;
    let series: Vec<(String, Vec<(f64, f64)>)> = r
        .overload
        .iter()
        .map(|run| {
            let points = run.bins.iter().enumerate().map(|(b, v)| (b as f64 * bin_s, *v)).collect();
            let budget = run.budget.map_or(String::new(), |(m, r)| format!(" + {m}/{r}"));
            (format!("{}{budget}", run.peer.short()), points)
        })
        .collect();
    let slow = [(world.slow_from_ms as f64 / 1000.0, world.slow_until_ms as f64 / 1000.0)];
    let shade = Some((&slow[..], "every request slow"));
    lines(
        &dir.join("overload.svg"),
        "A slow outage under hedging: the budget caps the extra load",
        ("time (s)", "requests sent per request offered"),
        &series,
        false,
        shade,
    )
}

fn outage(path: &Path, title: &str, world: &World, runs: &[crate::outage::Run]) -> Result<(), Failure> {
    let per_second = f64::from(1000 / BIN_MS);
    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|run| {
            let points = run
                .sent
                .iter()
                .enumerate()
                .map(|(b, v)| ((b as u32 * BIN_MS) as f64 / 1000.0, (*v as f64 * per_second).max(1.0)))
                .collect();
            (run.peer.label().to_string(), points)
        })
        .collect();
    // The down phases: one interval, or every other flap of a flapping world.
    let mut shade = Vec::new();
    let step = if world.flap_ms == 0 { world.outage_ms } else { world.flap_ms };
    let mut from = world.outage_start_ms;
    while from < world.recovery_ms() {
        if world.down(from) {
            shade.push((f64::from(from) / 1000.0, f64::from((from + step).min(world.recovery_ms())) / 1000.0));
        }
        from += step;
    }
    let shade = Some((shade.as_slice(), "server down"));
    lines(path, title, ("time (s)", "requests sent to the server (per s, log scale)"), &series, true, shade)
}

/// A line plot; `log` for a logarithmic y axis; `shade` marks an interval of x (the outage).
fn lines(
    path: &Path,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
    log: bool,
    shade: Option<(&[(f64, f64)], &str)>,
) -> Result<(), Failure> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    // The legend gets its own column, so it never hides a line.
    let (plot_area, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let x_max = points.clone().map(|p| p.0).fold(0.0, f64::max);
    let x_min = points.clone().map(|p| p.0).fold(f64::INFINITY, f64::min).min(0.0);
    let y_max = points.clone().map(|p| p.1).fold(0.0, f64::max);
    let y_min_positive = points.map(|p| p.1).filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min);
    let mut builder = ChartBuilder::on(&plot_area);
    builder.caption(title, ("sans-serif", 24)).margin(16).x_label_area_size(48).y_label_area_size(84);
    macro_rules! draw {
        ($chart:expr, $y_low:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 17))
                .draw()?;
            for &(from, to) in shade.map_or(&[][..], |(intervals, _)| intervals) {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(from, $y_low), (to, y_max * 1.5)],
                    SHADE.filled(),
                )))?;
            }
            for (i, (_, data)) in series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                chart.draw_series(LineSeries::new(data.iter().copied(), colour.stroke_width(2)))?;
            }
        }};
    }
    if log {
        // From the decade below half the smallest value, so the lowest line sits clear of the axis.
        let low = 10f64.powf((y_min_positive / 2.0).log10().floor());
        draw!(builder.build_cartesian_2d(x_min..x_max, (low..y_max * 1.5).log_scale())?, low);
    } else {
        draw!(builder.build_cartesian_2d(x_min..x_max, 0.0..y_max * 1.05)?, 0.0);
    }
    let font = ("sans-serif", 16).into_font();
    let mut y = 70;
    if let Some((_, label)) = shade {
        legend_area.draw(&Rectangle::new([(8, y - 8), (40, y + 8)], SHADE.filled()))?;
        legend_area.draw(&Text::new(label, (48, y - 9), font.clone()))?;
        y += 28;
    }
    for (i, (name, _)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        legend_area.draw(&PathElement::new(vec![(8, y), (40, y)], colour.stroke_width(4)))?;
        legend_area.draw(&Text::new(name.as_str(), (48, y - 9), font.clone()))?;
        y += 28;
    }
    root.present()?;
    Ok(())
}
