//! Integration tests of kcache-apiserver over real HTTP.

mod binary;
mod clients;
mod crds;
mod crds_kube;
mod faults;
mod hostile;
mod kubectl;
mod kubectl_crds;
mod lists;
mod noop_writes;
mod python;
mod reflector;
mod storage;
mod support;
mod validation;
mod watches;
mod writes;
