//! The reproduction runs: `cargo bench --bench repro -- EXPERIMENT [options]` runs one of the
//! papers' experiments (XIndex §6 Figs. 9–16, YCSB A–F, XIndex-H Figs. 25–27) on every index
//! that fits it, prints a table of throughput ratios measured in the same run, and writes
//! `target/repro/EXPERIMENT.csv` and `.svg`. `--help` lists the experiments and options; see
//! `benches/README.md`.
//!
//! The binary installs the counting allocator that measures each index's bytes per key, unless
//! it is built with the `uncounted-alloc` feature, which measures what the counting costs the
//! indexes that allocate per operation (the bytes per key then count the huge-page heap alone).

use std::process::ExitCode;

use learnkv_bench::args::{self, Command};
use learnkv_bench::error::Error;
use learnkv_bench::{experiments, output};

#[cfg(not(feature = "uncounted-alloc"))]
#[global_allocator]
static ALLOCATOR: learnkv_bench::alloc_counter::CountingAllocator =
    learnkv_bench::alloc_counter::CountingAllocator;

fn main() -> ExitCode {
    let options = match args::parse(std::env::args().skip(1)) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => {
            print!("{}", args::usage());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Nothing) => {
            eprintln!("repro: no experiment given, nothing to run (`--help` lists them)");
            return ExitCode::SUCCESS;
        }
        Err(error) => return fail(&error),
    };
    match experiments::run(&options).and_then(|outcome| output::publish(&outcome)) {
        Ok((csv, svg)) => {
            println!("wrote {} and {}", csv.display(), svg.display());
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

/// Prints the error and returns its exit code.
fn fail(error: &Error) -> ExitCode {
    eprintln!("error: {error}");
    if matches!(error, Error::Usage(_)) {
        eprintln!("(`cargo bench --bench repro -- --help` lists the experiments and options)");
    }
    ExitCode::from(error.exit_code())
}
