//! Queues between a Kubernetes reflector and its consumers: FIFO, DeltaFIFO, the in-order RealFIFO and the controller work queue
//!
//! (Work in progress.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
