//! Allocator benchmarks (placeholder).

fn main() {}
