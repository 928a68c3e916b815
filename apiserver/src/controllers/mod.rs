//! Controllers that run inside the server as tasks: they watch through the server's own watch
//! caches and write through its write path (module `registry`), and stop with the server.
//!
//! - crd.rs: serves what CustomResourceDefinitions declare (Kubernetes' establishing, naming
//!   and finalizer controllers of the apiextensions-apiserver).

mod crd;

pub(crate) use crd::spawn_crd_controller;
