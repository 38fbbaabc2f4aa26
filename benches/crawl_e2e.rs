//! placeholder, written by the benchmark helper
fn main() {}
