//! The bounded waits: they hand back what they awaited, and fail naming it when it never comes.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;

use kcache_testkit::{until, within, within_for};

#[tokio::test(start_paused = true)]
async fn within_returns_the_output_of_what_it_awaited() {
    assert_eq!(within("the answer", async { 42 }).await, 42);
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out after 60s waiting for the event that never comes")]
async fn within_fails_naming_what_it_awaited_when_it_never_comes() {
    within("the event that never comes", std::future::pending::<()>()).await;
}

#[tokio::test(start_paused = true)]
async fn within_for_waits_past_the_patience_until_its_own_deadline() {
    let ten_minutes = Duration::from_secs(600);
    within_for(
        ten_minutes * 2,
        "a ten-minute sleep",
        tokio::time::sleep(ten_minutes),
    )
    .await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out after 600s waiting for an hour-long sleep")]
async fn within_for_fails_at_its_own_deadline() {
    let hour = Duration::from_secs(3600);
    within_for(
        Duration::from_secs(600),
        "an hour-long sleep",
        tokio::time::sleep(hour),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn until_returns_once_the_condition_holds() {
    let checks = AtomicUsize::new(0);
    until("the third check", || {
        checks.fetch_add(1, Ordering::SeqCst) == 2
    })
    .await;
    assert_eq!(checks.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out after 60s waiting for a condition that never holds")]
async fn until_fails_naming_the_condition_when_it_never_holds() {
    until("a condition that never holds", || false).await;
}
