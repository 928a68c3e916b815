//! An in-process, Kubernetes-compatible list/watch API server with the API server's watch cache, for tests and local development
//!
//! (Work in progress.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
