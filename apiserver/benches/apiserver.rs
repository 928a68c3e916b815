//! Benchmarks of kcache-apiserver (work in progress).

fn main() {}
