//! Generates an integer data set and writes it as a SOSD file, timing each step, so that the
//! harness (or SOSD's own tools) can read the same keys with `--dataset sosd:PATH`.
//!
//! ```text
//! cargo run --release -p workload --example generate -- DATASET COUNT OUT [SEED]
//! cargo run --release -p workload --example generate -- lognormal 200M datasets/generated/lognormal_200M_uint64
//! ```
//!
//! `COUNT` is a number with an optional `K` or `M` suffix, or `all` for a real set's natural size;
//! `OUT` must end in `_uint64` (or `_uint32` when every key fits in 32 bits).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use workload::Dataset;
use workload::dataset::sosd;

/// Parses `123`, `10K`, `200M` or `all`.
fn parse_count(text: &str) -> Option<Option<usize>> {
    if text == "all" {
        return Some(None);
    }
    let (digits, scale) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 1_000),
        b'M' | b'm' => (&text[..text.len() - 1], 1_000_000),
        _ => (text, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(scale).map(Some)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dataset), Some(count), Some(out)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: generate DATASET COUNT OUT [SEED]");
        return ExitCode::FAILURE;
    };
    let Some(count) = parse_count(count) else {
        eprintln!("COUNT must be a number with an optional K or M suffix, or `all`, not `{count}`");
        return ExitCode::FAILURE;
    };
    let Some(seed) = args.get(3).map_or(Some(42), |seed| seed.parse().ok()) else {
        eprintln!("SEED must be a number");
        return ExitCode::FAILURE;
    };
    match generate(dataset, count, &PathBuf::from(out), seed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Generates, writes and reads back the data set, printing the time of each step.
fn generate(
    name: &str,
    count: Option<usize>,
    out: &std::path::Path,
    seed: u64,
) -> workload::Result<()> {
    let dataset: Dataset = name.parse()?;
    let start = Instant::now();
    let keys = dataset.u64_keys(count, seed)?;
    let generated = start.elapsed();
    println!(
        "{name}: {} keys generated in {:.3} s",
        keys.len(),
        generated.as_secs_f64()
    );
    let start = Instant::now();
    sosd::write(out, &keys)?;
    println!(
        "written to {} in {:.3} s",
        out.display(),
        start.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    let read = sosd::read(out)?;
    println!(
        "read back in {:.3} s ({})",
        start.elapsed().as_secs_f64(),
        if read == keys {
            "identical"
        } else {
            "DIFFERENT"
        }
    );
    Ok(())
}
