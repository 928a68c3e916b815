//! Integration tests of kcache-informer, named after the behaviours in the reference.

mod common;
mod controller;
mod e2e;
mod handlers;
mod hostile;
mod logs;
mod making;
mod object_cache;
mod processor;
mod queue_semantics;
mod resync;
mod shared_informer;
