//! Integration tests of kcache-informer, named after the behaviours in the reference.

mod common;
mod controller;
mod e2e;
mod handlers;
mod hostile;
mod logs;
mod making;
#[cfg(feature = "prometheus")]
mod metrics;
mod object_cache;
mod paged;
mod processor;
mod queue_semantics;
mod read_your_writes;
mod resync;
mod shared_informer;
mod shared_informer_lifecycle;
