//! Benches of kcache-informer.
#![allow(missing_docs)]

fn main() {}
