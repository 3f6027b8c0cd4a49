//! The SVG plot of a reproduction run, drawn with plotters: grouped bars — one group per index,
//! one bar per thread count, one panel per (workload, data set) and metric — in the manner of the
//! papers' bar charts; for the distribution shift, throughput over time, one line per index and
//! one panel per thread count (XIndex Fig. 14).

use std::path::Path;
use std::time::Duration;

use plotters::prelude::*;
use workload::report::Record;

/// Series colours, in order (a colour-blind-safe palette).
const COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// A series' colour.
fn color(series: usize) -> RGBColor {
    COLORS[series % COLORS.len()]
}

/// Panels per row.
const COLUMNS: usize = 2;

/// A bar plot's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Throughput, millions of operations per second.
    Mops,
    /// The exact maximum latency, in milliseconds.
    MaxLatencyMs,
}

impl Metric {
    fn label(self) -> &'static str {
        match self {
            Self::Mops => "Mops/s",
            Self::MaxLatencyMs => "max latency (ms)",
        }
    }

    fn value(self, record: &Record) -> f64 {
        match self {
            Self::Mops => record.mops,
            Self::MaxLatencyMs => record.max_ns as f64 / 1e6,
        }
    }
}

/// One index's throughput over time at one thread count.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The index.
    pub index: String,
    /// Worker threads.
    pub threads: usize,
    /// The interval of each point.
    pub interval: Duration,
    /// Mops/s per interval.
    pub mops: Vec<f64>,
}

/// The items of `items` in order of first appearance, without repeats.
fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

/// The drawing area for `panels` panels of `width` × `height` pixels under a title.
fn layout(panels: usize, width: u32, height: u32) -> (u32, u32, usize, usize) {
    let columns = panels.clamp(1, COLUMNS);
    let rows = panels.div_ceil(columns).max(1);
    (
        width * columns as u32,
        height * rows as u32 + 40,
        rows,
        columns,
    )
}

/// Grouped bars of `records`, one panel per (workload, data set) and metric, to `path`.
pub fn bars(
    path: &Path,
    title: &str,
    records: &[Record],
    metrics: &[Metric],
) -> Result<(), String> {
    let groups = distinct(
        records
            .iter()
            .map(|record| (record.workload.as_str(), record.dataset.as_str())),
    );
    let indexes_most = groups
        .iter()
        .map(|group| {
            distinct(
                records
                    .iter()
                    .filter(|r| (r.workload.as_str(), r.dataset.as_str()) == *group)
                    .map(|r| r.index.as_str()),
            )
            .len()
        })
        .max()
        .unwrap_or(1);
    let panel_width = (110 * indexes_most as u32).max(560);
    let (width, height, rows, columns) = layout(groups.len() * metrics.len(), panel_width, 380);
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((rows, columns));
    let mut panel = panels.iter();
    for &(workload, dataset) in &groups {
        let group: Vec<&Record> = records
            .iter()
            .filter(|r| r.workload == workload && r.dataset == dataset)
            .collect();
        for &metric in metrics {
            let area = panel
                .next()
                .expect("the layout has a panel per group and metric");
            draw_bars(area, &format!("{workload} | {dataset}"), &group, metric)?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

/// One panel of grouped bars.
fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    records: &[&Record],
    metric: Metric,
) -> Result<(), String> {
    let indexes = distinct(records.iter().map(|r| r.index.as_str()));
    let threads = {
        let mut threads = distinct(records.iter().map(|r| r.threads));
        threads.sort_unstable();
        threads
    };
    let top = records
        .iter()
        .map(|r| metric.value(r))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let count = indexes.len();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..count as f64 - 0.5, 0.0..top)
        .map_err(|e| e.to_string())?;
    let name_at = |x: &f64| {
        let slot = x.round();
        if (x - slot).abs() < 1e-6 && slot >= 0.0 {
            indexes
                .get(slot as usize)
                .map_or(String::new(), |name| (*name).to_owned())
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(count + 1)
        .x_label_formatter(&name_at)
        .x_label_style(("sans-serif", 12))
        .y_desc(metric.label())
        .draw()
        .map_err(|e| e.to_string())?;
    let width = 0.8 / threads.len().max(1) as f64;
    for (series, &thread_count) in threads.iter().enumerate() {
        let fill = color(series);
        let bars = records
            .iter()
            .filter(|r| r.threads == thread_count)
            .filter_map(|r| {
                let slot = indexes.iter().position(|name| *name == r.index)? as f64;
                let left = slot - 0.4 + width * series as f64;
                Some(Rectangle::new(
                    [(left, 0.0), (left + width * 0.92, metric.value(r))],
                    fill.filled(),
                ))
            });
        chart
            .draw_series(bars)
            .map_err(|e| e.to_string())?
            .label(format!("{thread_count} threads"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], fill.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| e.to_string())
}

/// Throughput over time, one panel per thread count, one line per index, to `path`.
pub fn timelines(path: &Path, title: &str, series: &[Series]) -> Result<(), String> {
    let thread_counts = {
        let mut counts = distinct(series.iter().map(|s| s.threads));
        counts.sort_unstable();
        counts
    };
    let (width, height, rows, columns) = layout(thread_counts.len(), 720, 420);
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| e.to_string())?;
    for (area, &threads) in root
        .split_evenly((rows, columns))
        .iter()
        .zip(&thread_counts)
    {
        let lines: Vec<&Series> = series.iter().filter(|s| s.threads == threads).collect();
        let seconds = |s: &Series, i: usize| (i as f64 + 0.5) * s.interval.as_secs_f64();
        let right = lines
            .iter()
            .map(|s| seconds(s, s.mops.len()))
            .fold(0.0, f64::max)
            .max(1e-3);
        let top = lines
            .iter()
            .flat_map(|s| s.mops.iter().copied())
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{threads} threads"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..right, 0.0..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("Mops/s")
            .draw()
            .map_err(|e| e.to_string())?;
        for (number, line) in lines.iter().enumerate() {
            let stroke = color(number);
            let points = line
                .mops
                .iter()
                .enumerate()
                .map(|(i, &mops)| (seconds(line, i), mops));
            chart
                .draw_series(LineSeries::new(points, stroke.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(line.index.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], stroke.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}
