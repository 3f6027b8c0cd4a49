//! YCSB's core workloads A–F (Cooper et al., SoCC 2010; the `workloads/workload[a-f]` files of
//! the YCSB distribution), as run by XIndex §6.3 and the other papers: standard mixes, request
//! distribution scrambled Zipfian with θ = 0.99 (latest for D), scan lengths uniform in 1–100.

use std::fmt;
use std::str::FromStr;

use crate::distribution::KeyDistribution;
use crate::error::{Error, Result};
use crate::mix::Mix;
use crate::zipf::YCSB_THETA;

/// A YCSB core workload.
///
/// ```
/// use workload::{OpKind, Ycsb};
/// let d: Ycsb = "d".parse()?;
/// assert_eq!(d.mix().fraction(OpKind::Insert), 0.05);
/// assert_eq!(d.to_string(), "ycsb-d");
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ycsb {
    /// Update heavy: 50 % reads, 50 % updates.
    A,
    /// Read mostly: 95 % reads, 5 % updates.
    B,
    /// Read only.
    C,
    /// Read latest: 95 % reads, 5 % inserts, reads favour the newest records — each thread's own
    /// (see [`KeyDistribution::Latest`]).
    D,
    /// Short ranges: 95 % scans of 1–100 keys, 5 % inserts.
    E,
    /// Read-modify-write: 50 % reads, 50 % read-modify-writes.
    F,
}

impl Ycsb {
    /// All six, in order.
    pub const ALL: [Self; 6] = [Self::A, Self::B, Self::C, Self::D, Self::E, Self::F];

    /// The operation mix.
    pub fn mix(self) -> Mix {
        match self {
            Self::A => Mix {
                get: 0.5,
                update: 0.5,
                ..Mix::NONE
            },
            Self::B => Mix {
                get: 0.95,
                update: 0.05,
                ..Mix::NONE
            },
            Self::C => Mix {
                get: 1.0,
                ..Mix::NONE
            },
            Self::D => Mix {
                get: 0.95,
                insert: 0.05,
                ..Mix::NONE
            },
            Self::E => Mix {
                scan: 0.95,
                insert: 0.05,
                ..Mix::NONE
            },
            Self::F => Mix {
                get: 0.5,
                read_modify_write: 0.5,
                ..Mix::NONE
            },
        }
    }

    /// The request distribution: latest for D, scrambled Zipfian (θ = 0.99) otherwise.
    pub fn distribution(self) -> KeyDistribution {
        match self {
            Self::D => KeyDistribution::Latest { theta: YCSB_THETA },
            _ => KeyDistribution::YCSB,
        }
    }

    /// The name in reports, `ycsb-a` to `ycsb-f`.
    pub fn name(self) -> &'static str {
        match self {
            Self::A => "ycsb-a",
            Self::B => "ycsb-b",
            Self::C => "ycsb-c",
            Self::D => "ycsb-d",
            Self::E => "ycsb-e",
            Self::F => "ycsb-f",
        }
    }
}

impl fmt::Display for Ycsb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Ycsb {
    type Err = Error;

    /// Accepts `a`–`f`, `A`–`F` and `ycsb-a`–`ycsb-f`.
    fn from_str(name: &str) -> Result<Self> {
        let lower = name.to_ascii_lowercase();
        let letter = lower.strip_prefix("ycsb-").unwrap_or(&lower);
        Self::ALL
            .into_iter()
            .find(|workload| workload.name().ends_with(letter) && letter.len() == 1)
            .ok_or_else(|| {
                Error::invalid(format!("unknown YCSB workload `{name}` (expected a to f)"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::KeySpace;
    use crate::mix::Workload;
    use crate::op::{OpCounts, OpKind};

    #[test]
    fn mixes_are_within_their_ratios_over_a_million_operations() {
        let draws = 1_000_000u64;
        let space = KeySpace::split((0..200_000u64).collect(), 100_000, 1).expect("valid split");
        for workload in Ycsb::ALL {
            let mut counts = OpCounts::default();
            let mut scan_total = 0u64;
            for op in Workload::ycsb(workload)
                .generator(&space, 0, 1, 7)
                .expect("valid")
                .take(draws as usize)
            {
                counts.add(&op);
                if let crate::Op::Scan(_, len) = op {
                    assert!((1..=100).contains(&len));
                    scan_total += len as u64;
                }
            }
            assert_eq!(
                counts.total(),
                draws,
                "{workload}: the pool is large enough"
            );
            for kind in OpKind::ALL {
                let p = workload.mix().fraction(kind);
                let observed = counts[kind] as f64 / draws as f64;
                // Six binomial standard deviations: at most 0.3 percentage points, well within 1 %.
                let tolerance = 6.0 * (p * (1.0 - p) / draws as f64).sqrt();
                assert!(tolerance <= 0.01);
                assert!(
                    (observed - p).abs() <= tolerance,
                    "{workload} {kind:?}: {observed} vs {p}"
                );
            }
            if counts[OpKind::Scan] > 0 {
                let mean = scan_total as f64 / counts[OpKind::Scan] as f64;
                assert!((mean - 50.5).abs() < 0.3, "mean scan length {mean}");
            }
        }
    }

    #[test]
    fn names_parse() {
        for workload in Ycsb::ALL {
            assert_eq!(workload.name().parse::<Ycsb>().expect("own name"), workload);
            assert_eq!(
                workload.name()[5..]
                    .to_uppercase()
                    .parse::<Ycsb>()
                    .expect("letter"),
                workload
            );
        }
        for bad in ["", "g", "ycsb-", "ycsb-ab", "aa"] {
            assert!(bad.parse::<Ycsb>().is_err(), "{bad}");
        }
    }
}
