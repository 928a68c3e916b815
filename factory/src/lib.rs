//! SharedInformerFactory for Kubernetes in Rust: one shared informer per resource type, typed, dynamic and metadata-only
//!
//! (Work in progress.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
