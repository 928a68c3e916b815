//! Bounded waits for kcache's tests: a test awaiting something that never comes fails within
//! [`PATIENCE`] with a message naming what it awaited, instead of hanging CI.
//!
//! Under `#[tokio::test(start_paused = true)]` the deadline is virtual: it fires as soon as every
//! task is idle with no earlier timer, so a missing event fails the test at once. Over real time
//! (TCP, threads) the deadline is generous, so that it says nothing about speed: that belongs in
//! benches.
//!
//! A crate of its own, depending on no kcache crate, so that every crate's tests (workqueue,
//! leader election and the events recorder included, which stand beside the stack) can
//! dev-depend on it without breaking the layering; it is not published.

use std::future::IntoFuture;
use std::time::Duration;

/// How long a test waits for what it expects before failing.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How often [`until`] checks its condition.
const POLL: Duration = Duration::from_millis(1);

/// Awaits `fut`, failing the test with "timed out after 60s waiting for {what}" if it is not
/// ready within [`PATIENCE`].
pub async fn within<F: IntoFuture>(what: &str, fut: F) -> F::Output {
    within_for(PATIENCE, what, fut).await
}

/// [`within`] with another deadline: for a paused-time test awaiting something due after more
/// virtual time than [`PATIENCE`] (a watch's 5 to 10 minute timeout, a resync period).
pub async fn within_for<F: IntoFuture>(deadline: Duration, what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(deadline, fut).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

/// Waits until `condition` holds (checked every millisecond), failing the test as [`within`]
/// does if it does not within [`PATIENCE`]. For conditions nothing signals; prefer awaiting the
/// event itself with [`within`].
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    within(what, async {
        while !condition() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
}
