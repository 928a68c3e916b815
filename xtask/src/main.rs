//! kcache automation.

fn main() {}
