//! Integration tests of kcache-apiserver over real HTTP.

mod api_groups;
mod apply;
mod binary;
mod clients;
mod defaulting;
mod events;
mod faults;
mod hostile;
mod javascript;
mod kind_rules;
mod kubectl;
mod kubectl_apply;
mod kubectl_tables;
mod lifecycle;
mod lists;
mod noop_writes;
mod python;
mod reflector;
mod served;
mod storage;
mod support;
mod tables;
mod validation;
mod watches;
mod writes;
