//! Integration tests of kcache-reflector, named after the reflector behaviours of the reference
//! (client-go's reflector_test.go). They run on tokio's paused clock.

// The contract's `ListWatchError` holds a `Status` by value.
#![allow(clippy::result_large_err)]

mod convergence;
mod events;
mod fake_source;
mod hostile;
mod kube_http;
mod list;
mod making;
mod retry_after;
mod support;
mod watch;
mod watch_list;
