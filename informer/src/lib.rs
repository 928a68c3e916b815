//! Kubernetes shared informers for Rust: the controller loop, SharedIndexInformer with many event handlers, listers and a watch-based object cache
//!
//! (Work in progress.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
