//! Learned-index models for learnkv: how a sorted array of keys is learned and searched.
//!
//! A learned index replaces the comparisons of a search tree by a model that predicts where a
//! key sits in a sorted array, then searches a small window around the prediction (XIndex §2,
//! Kraska et al.). This crate holds the models every index of the workspace shares:
//!
//! - [`Key`]: `u64` and byte-string keys as model input ([`offset_from_pivot`] for integers);
//! - [`LinearModel`]: least squares (or through the endpoints) with exact error bounds and a
//!   clamped, monotone prediction; [`KeyModel`] is what every model offers;
//! - segmentation under a maximum error: [`optimal_segments`] (optimal PLA) and
//!   [`probe_segments`] (FINEdex's learning probe);
//! - roots: the two-stage [`Rmi`] (XIndex §3.1.1) and the [`PiecewiseRoot`] (XIndex §3.4.3);
//! - strings: [`PartialKeyLayout`] (XIndex Algorithm 6), [`StringModel`] over partial-key
//!   bytes, [`GreedyGrouping`] (XIndex Algorithm 7);
//! - [`search`]: the last-mile search around a prediction, always returning the true lower
//!   bound.
//!
//! Pure code: no threads, no `unsafe`.
//!
//! ```
//! use learned_model::{KeyModel, LinearModel, search};
//! let keys: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
//! let model = LinearModel::fit(&keys).unwrap();
//! let query = 4_000_001;
//! assert_eq!(model.lower_bound(&keys, &query), search::lower_bound(&keys, &query));
//! ```

#![forbid(unsafe_code)]

mod error;
mod grouping;
mod key;
mod linear;
mod model;
mod partial_key;
mod piecewise;
mod rmi;
pub mod search;
mod segmentation;
mod string_model;

pub use error::{Error, Result};
pub use grouping::GreedyGrouping;
pub use key::{Key, offset_from_pivot, prefix_word};
pub use linear::LinearModel;
pub use model::{ErrorBounds, KeyModel, clamp_prediction};
pub use partial_key::{PartialKeyLayout, common_prefix_len};
pub use piecewise::PiecewiseRoot;
pub use rmi::Rmi;
pub use segmentation::{LearningProbe, Segment, optimal_segments, probe_segments};
pub use string_model::{MAX_FEATURES, StringModel};
