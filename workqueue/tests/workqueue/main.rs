//! Integration tests of kcache-workqueue, named after the behaviours in the reference.

mod concurrency;
mod metrics;
#[cfg(feature = "prometheus")]
mod prometheus;
mod proptests;
mod rate_limiter;
mod stale;
mod work_queue;
