//! Criterion benches of the bbrl kernels live in `kernels.rs`; this crate has no library code.
