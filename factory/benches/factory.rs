//! Benches of kcache-factory.
#![allow(missing_docs)]

fn main() {}
