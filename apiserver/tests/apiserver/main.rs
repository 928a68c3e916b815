//! Integration tests of kcache-apiserver over real HTTP.

mod api_groups;
mod binary;
mod clients;
mod faults;
mod hostile;
mod javascript;
mod kubectl;
mod lifecycle;
mod lists;
mod noop_writes;
mod python;
mod reflector;
mod storage;
mod support;
mod validation;
mod watches;
mod writes;
