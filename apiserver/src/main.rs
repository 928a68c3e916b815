//! The `kcache-apiserver` binary (work in progress).

fn main() {}
