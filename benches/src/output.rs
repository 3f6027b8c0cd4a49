//! Where a reproduction run's results go: the table on stdout (every index next to the others
//! measured in the same configuration, with their throughput ratios: `workload::report::table`),
//! `target/repro/EXPERIMENT.csv` (`workload::report`'s header and rows; rewritten by each
//! invocation) and `target/repro/EXPERIMENT.svg` ([`crate::plot`]).

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use workload::report::{CsvWriter, table};

use crate::error::Error;
use crate::experiments::Outcome;
use crate::plot;

/// The workspace's `target/` directory: `CARGO_TARGET_DIR` if it is an absolute path; else the
/// nearest ancestor of the running binary that cargo marked as a target directory (it holds
/// `CACHEDIR.TAG`); else `target/` at the workspace root.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from)
        && dir.is_absolute()
    {
        return dir;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Prints the table and remarks, and writes the CSV file and the plot; returns their paths.
pub fn publish(outcome: &Outcome) -> Result<(PathBuf, PathBuf), Error> {
    let name = outcome.experiment.name();
    println!("{}", table(&outcome.runs));
    for remark in &outcome.remarks {
        println!("{remark}");
    }
    let dir = target_dir().join("repro");
    fs::create_dir_all(&dir)
        .map_err(|error| Error::failed(format!("creating {}: {error}", dir.display())))?;
    let csv = dir.join(format!("{name}.csv"));
    let file = File::create(&csv)
        .map_err(|error| Error::failed(format!("creating {}: {error}", csv.display())))?;
    let mut writer = CsvWriter::new(BufWriter::new(file)).map_err(Error::failed)?;
    for record in &outcome.records {
        writer.write(record).map_err(Error::failed)?;
    }
    writer.flush().map_err(Error::failed)?;
    let svg = dir.join(format!("{name}.svg"));
    let title = format!("learnkv repro: {name}");
    if outcome.timelines.is_empty() {
        plot::bars(&svg, &title, &outcome.records, &outcome.metrics)
    } else {
        plot::timelines(&svg, &title, &outcome.timelines)
    }
    .map_err(|error| Error::failed(format!("drawing {}: {error}", svg.display())))?;
    Ok((csv, svg))
}
