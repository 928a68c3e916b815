//! Integration tests of kcache-apiserver over real HTTP.

mod clients;
mod faults;
mod hostile;
mod kubectl;
mod lists;
mod reflector;
mod support;
mod watches;
mod writes;
