//! Reports of the reproduction runs: one CSV row per run (the file the plots are drawn from) and a
//! plain-text table that puts every index next to the others measured in the same run and
//! configuration, with their throughput ratios — the form in which DESIGN.md asks results to be
//! quoted on a shared 2-core machine (medians of repeated runs, ratios within one run).

use std::borrow::Cow;
use std::fmt::{Display, Write as _};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::runner::RunResult;

/// The CSV header, exactly.
pub const CSV_HEADER: &str = "experiment,workload,dataset,index,threads,keys,ops,seconds,mops,p50_ns,p99_ns,p999_ns,max_ns,notes";

/// One row of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The experiment, e.g. `ycsb`, `rw-ratio`, `shift`.
    pub experiment: String,
    /// The workload's name.
    pub workload: String,
    /// The data set's label.
    pub dataset: String,
    /// The index's name.
    pub index: String,
    /// Worker threads.
    pub threads: usize,
    /// Keys loaded before the run.
    pub keys: u64,
    /// Measured operations.
    pub ops: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// Millions of operations per second.
    pub mops: f64,
    /// Median latency.
    pub p50_ns: u64,
    /// 99th percentile latency.
    pub p99_ns: u64,
    /// 99.9th percentile latency.
    pub p999_ns: u64,
    /// Exact maximum latency.
    pub max_ns: u64,
    /// Free-form `key=value` notes, in order.
    pub notes: Vec<(String, String)>,
}

impl Record {
    /// The row of a run, with notes `p9999_ns`, `warmup_ops` and, when non-zero,
    /// `exhausted_threads`.
    pub fn from_run(
        experiment: &str,
        workload: &str,
        dataset: &str,
        keys: u64,
        run: &RunResult,
    ) -> Self {
        let mut record = Self {
            experiment: experiment.to_owned(),
            workload: workload.to_owned(),
            dataset: dataset.to_owned(),
            index: run.index.clone(),
            threads: run.threads,
            keys,
            ops: run.ops,
            seconds: run.seconds,
            mops: run.mops,
            p50_ns: run.latency.p50_ns,
            p99_ns: run.latency.p99_ns,
            p999_ns: run.latency.p999_ns,
            max_ns: run.latency.max_ns,
            notes: Vec::new(),
        }
        .note("p9999_ns", run.latency.p9999_ns)
        .note("warmup_ops", run.warmup_ops);
        if run.exhausted_threads > 0 {
            record = record.note("exhausted_threads", run.exhausted_threads);
        }
        record
    }

    /// The same with one more note.
    pub fn note(mut self, key: impl Into<String>, value: impl Display) -> Self {
        self.notes.push((key.into(), value.to_string()));
        self
    }

    /// The notes field: `key=value` pairs joined by `;`, with `\`, `;` and `=` inside keys and
    /// values escaped by a backslash.
    ///
    /// ```
    /// use workload::report::Record;
    /// # let record = Record { experiment: "e".into(), workload: "w".into(), dataset: "d".into(),
    /// #     index: "i".into(), threads: 1, keys: 1, ops: 1, seconds: 1.0, mops: 1.0, p50_ns: 1,
    /// #     p99_ns: 1, p999_ns: 1, max_ns: 1, notes: vec![] };
    /// let record = record.note("run", 2).note("params", "a=1;b=2");
    /// assert_eq!(record.notes_field(), r"run=2;params=a\=1\;b\=2");
    /// ```
    pub fn notes_field(&self) -> String {
        let escape = |text: &str| {
            text.replace('\\', r"\\")
                .replace(';', r"\;")
                .replace('=', r"\=")
        };
        self.notes
            .iter()
            .map(|(key, value)| format!("{}={}", escape(key), escape(value)))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// The CSV line (without the line break), fields in [`CSV_HEADER`] order.
    pub fn csv_line(&self) -> String {
        [
            csv_field(&self.experiment),
            csv_field(&self.workload),
            csv_field(&self.dataset),
            csv_field(&self.index),
            Cow::Owned(self.threads.to_string()),
            Cow::Owned(self.keys.to_string()),
            Cow::Owned(self.ops.to_string()),
            Cow::Owned(format!("{:.6}", self.seconds)),
            Cow::Owned(format!("{:.6}", self.mops)),
            Cow::Owned(self.p50_ns.to_string()),
            Cow::Owned(self.p99_ns.to_string()),
            Cow::Owned(self.p999_ns.to_string()),
            Cow::Owned(self.max_ns.to_string()),
            Cow::Owned(csv_field(&self.notes_field()).into_owned()),
        ]
        .join(",")
    }
}

/// A CSV field: quoted (with inner quotes doubled) when it holds a comma, a quote or a line
/// break, as RFC 4180 says.
///
/// ```
/// use workload::report::csv_field;
/// assert_eq!(csv_field("scc"), "scc");
/// assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
/// ```
pub fn csv_field(text: &str) -> Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(text)
    }
}

/// Writes [`Record`]s as CSV lines under [`CSV_HEADER`].
///
/// ```
/// use workload::report::{CsvWriter, CSV_HEADER};
/// let writer = CsvWriter::new(Vec::new())?;
/// assert_eq!(writer.into_inner(), format!("{CSV_HEADER}\n").into_bytes());
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug)]
pub struct CsvWriter<W: Write> {
    out: W,
}

impl<W: Write> CsvWriter<W> {
    /// A writer that starts with the header line.
    pub fn new(mut out: W) -> Result<Self> {
        writeln!(out, "{CSV_HEADER}")?;
        Ok(Self { out })
    }

    /// Writes one row.
    pub fn write(&mut self, record: &Record) -> Result<()> {
        writeln!(self.out, "{}", record.csv_line())?;
        Ok(())
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> Result<()> {
        Ok(self.out.flush()?)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl CsvWriter<BufWriter<File>> {
    /// Appends to the CSV file at `path`, creating it with the header if it is missing or empty.
    /// A file that starts with another header is an error (it was written by another version).
    pub fn append(path: &Path) -> Result<Self> {
        let io = |source| Error::io(path, source);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let mut first = String::new();
        BufReader::new(&mut file)
            .read_line(&mut first)
            .map_err(io)?;
        let mut out = BufWriter::new(file);
        if first.is_empty() {
            writeln!(out, "{CSV_HEADER}").map_err(io)?;
        } else if first.trim_end_matches(['\r', '\n']) != CSV_HEADER {
            return Err(Error::invalid(format!(
                "{} starts with another header: {}",
                path.display(),
                first.trim_end()
            )));
        }
        Ok(Self { out })
    }
}

/// The records of one configuration: same experiment, workload, data set, threads and keys.
struct Group<'a> {
    title: String,
    /// Each index in order of first appearance, with its runs.
    indexes: Vec<(&'a str, Vec<&'a Record>)>,
}

/// The median of some values (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.is_empty() {
        0.0
    } else if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// A plain-text table of the records: one block per configuration (experiment, workload, data
/// set, threads, keys), one line per index with its throughput and latencies (medians over its
/// runs when it was measured more than once), and, when the block holds several indexes, the
/// matrix of throughput ratios of every pair (row ÷ column).
///
/// ```
/// use workload::report::{table, Record};
/// let run = |index: &str, mops: f64| Record { experiment: "ycsb".into(), workload: "ycsb-c".into(),
///     dataset: "osm".into(), index: index.into(), threads: 2, keys: 1_000, ops: 10, seconds: 1.0,
///     mops, p50_ns: 100, p99_ns: 200, p999_ns: 300, max_ns: 400, notes: vec![] };
/// let text = table(&[run("xindex", 3.0), run("scc", 2.0)]);
/// assert!(text.contains("1.50")); // xindex ÷ scc
/// assert!(text.contains("0.67")); // scc ÷ xindex
/// ```
pub fn table(records: &[Record]) -> String {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for record in records {
        let title = format!(
            "{} | {} | dataset {} | {} threads | {} keys",
            record.experiment, record.workload, record.dataset, record.threads, record.keys
        );
        let group = match groups.iter().position(|group| group.title == title) {
            Some(position) => &mut groups[position],
            None => {
                groups.push(Group {
                    title,
                    indexes: Vec::new(),
                });
                groups.last_mut().expect("a group was just pushed")
            }
        };
        match group
            .indexes
            .iter_mut()
            .find(|(index, _)| *index == record.index)
        {
            Some((_, runs)) => runs.push(record),
            None => group.indexes.push((&record.index, vec![record])),
        }
    }
    let mut out = String::new();
    for group in &groups {
        write_group(&mut out, group);
    }
    out
}

/// Appends one configuration's block to `out`.
fn write_group(out: &mut String, group: &Group<'_>) {
    let width = group
        .indexes
        .iter()
        .map(|(index, _)| index.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let column = |runs: &[&Record], field: fn(&Record) -> f64| {
        median(runs.iter().map(|r| field(r)).collect())
    };
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{}", group.title);
    let _ = writeln!(
        out,
        "  {:<width$} {:>4} {:>10} {:>10} {:>10} {:>10} {:>12}",
        "index", "runs", "Mops/s", "p50 ns", "p99 ns", "p99.9 ns", "max ns"
    );
    let mut throughput = Vec::new();
    for (index, runs) in &group.indexes {
        let mops = column(runs, |r| r.mops);
        throughput.push(mops);
        let _ = writeln!(
            out,
            "  {:<width$} {:>4} {:>10.3} {:>10.0} {:>10.0} {:>10.0} {:>12.0}",
            index,
            runs.len(),
            mops,
            column(runs, |r| r.p50_ns as f64),
            column(runs, |r| r.p99_ns as f64),
            column(runs, |r| r.p999_ns as f64),
            column(runs, |r| r.max_ns as f64),
        );
    }
    if group.indexes.len() > 1 {
        let cell = group
            .indexes
            .iter()
            .map(|(index, _)| index.len())
            .max()
            .unwrap_or(0)
            .max(6);
        let _ = write!(out, "  throughput ratio (row / column)\n  {:<width$}", "");
        for (index, _) in &group.indexes {
            let _ = write!(out, " {index:>cell$}");
        }
        out.push('\n');
        for ((index, _), row) in group.indexes.iter().zip(&throughput) {
            let _ = write!(out, "  {index:<width$}");
            for column in &throughput {
                let ratio = if *column > 0.0 {
                    format!("{:.2}", row / column)
                } else {
                    "-".to_owned()
                };
                let _ = write!(out, " {ratio:>cell$}");
            }
            out.push('\n');
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(index: &str, threads: usize, mops: f64) -> Record {
        Record {
            experiment: "ycsb".into(),
            workload: "ycsb-a".into(),
            dataset: "osm".into(),
            index: index.into(),
            threads,
            keys: 100,
            ops: 1_000,
            seconds: 0.5,
            mops,
            p50_ns: 120,
            p99_ns: 900,
            p999_ns: 2_000,
            max_ns: 40_000,
            notes: vec![],
        }
    }

    #[test]
    fn csv_has_the_exact_header_and_quotes_fields() {
        let mut writer = CsvWriter::new(Vec::new()).expect("in memory");
        let mut row = record("my,index", 2, 1.5).note("a", 1).note("b", "x;y");
        row.dataset = "lines:\"q\".txt".into();
        writer.write(&row).expect("in memory");
        let text = String::from_utf8(writer.into_inner()).expect("ASCII");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        assert_eq!(
            lines.next(),
            Some(
                r#"ycsb,ycsb-a,"lines:""q"".txt","my,index",2,100,1000,0.500000,1.500000,120,900,2000,40000,a=1;b=x\;y"#
            )
        );
        assert_eq!(CSV_HEADER.split(',').count(), 14);
    }

    #[test]
    fn append_writes_the_header_once_and_refuses_foreign_files() {
        let path = std::env::temp_dir().join(format!("workload-report-{}.csv", std::process::id()));
        std::fs::remove_file(&path).ok();
        for index in ["a", "b"] {
            let mut writer = CsvWriter::append(&path).expect("writable");
            writer.write(&record(index, 1, 1.0)).expect("writable");
            writer.flush().expect("writable");
        }
        let text = std::fs::read_to_string(&path).expect("written");
        assert_eq!(text.lines().count(), 3);
        assert_eq!(text.matches(CSV_HEADER).count(), 1);
        std::fs::write(&path, "name,total_ops\n").expect("writable");
        assert!(CsvWriter::append(&path).is_err());
        std::fs::remove_file(&path).expect("removable");
    }

    #[test]
    fn table_groups_configurations_and_shows_every_ratio() {
        let records = [
            record("xindex", 1, 4.0),
            record("scc", 1, 2.0),
            record("xindex", 1, 6.0),
            record("dashmap", 1, 1.0),
            record("xindex", 2, 8.0),
        ];
        let text = table(&records);
        let blocks: Vec<&str> = text
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .collect();
        assert_eq!(blocks.len(), 2, "{text}");
        assert!(blocks[0].contains("1 threads") && blocks[1].contains("2 threads"));
        // xindex's median is 5.0: ratios 2.50 over scc, 5.00 over dashmap, 2.00 scc over dashmap.
        let xindex_row = blocks[0]
            .lines()
            .rfind(|l| l.trim_start().starts_with("xindex"))
            .expect("ratio row");
        assert_eq!(
            xindex_row.split_whitespace().collect::<Vec<_>>(),
            ["xindex", "1.00", "2.50", "5.00"]
        );
        assert!(
            blocks[0].contains("0.40") && blocks[0].contains("0.20") && blocks[0].contains("0.50")
        );
        assert!(!blocks[1].contains("ratio"), "a lone index has no ratios");
    }

    #[test]
    fn medians_are_medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}
