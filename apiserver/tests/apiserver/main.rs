//! Integration tests of kcache-apiserver over real HTTP.

mod clients;
mod faults;
mod kubectl;
mod lists;
mod noop_writes;
mod reflector;
mod storage;
mod support;
mod validation;
mod watches;
mod writes;
