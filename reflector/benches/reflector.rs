//! Benches of kcache-reflector (written next).

fn main() {}
