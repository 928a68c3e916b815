//! Integration tests of kcache-workqueue, named after the behaviours in the reference.

mod concurrency;
#[cfg(feature = "prometheus")]
mod prometheus;
mod proptests;
mod rate_limiter;
mod stale;
mod work_queue;
