//! Kubernetes list-watch reflector over kube-client: keeps a store equal to the API server's state through every failure
//!
//! (Work in progress.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
