//! Fault injection for tests of clients.

use std::time::Duration;

use futures::StreamExt;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn fail_next_requests_answers_the_status_then_recovers() {
    let s = start().await;
    let c = client(&s);
    s.fail_next_requests(2, 429);
    // A client without retries sees both failures.
    for _ in 0..2 {
        let (code, status) = get(&c, CMS).await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (429, Some("TooManyRequests"))
        );
    }
    assert_eq!(get(&c, CMS).await.0, 200);
}

#[tokio::test]
async fn end_all_watches_ends_every_stream() {
    let s = start().await;
    let c = client(&s);
    let mut a = watch(&c, &format!("{CMS}?watch=1")).await;
    let mut b = watch(&c, "/api/v1/pods?watch=1").await;
    s.end_all_watches();
    assert!(ends(&mut a).await);
    assert!(ends(&mut b).await);
}

#[tokio::test]
async fn malformed_watch_line_reaches_open_watches() {
    let s = start().await;
    let c = client(&s);
    let mut w = watch(&c, &format!("{CMS}?watch=1")).await;
    // The watch is registered once its response started; a write proves it.
    post(&c, CMS, &configmap("a", "1")).await;
    next_change(&mut w).await;
    s.inject_malformed_watch_line();
    let line = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&line).is_err());
}

#[tokio::test]
async fn response_delay_holds_responses_until_reset() {
    let s = start().await;
    let c = client(&s);
    // An hour's delay cannot be over after a second, however slow the machine.
    s.set_response_delay(Duration::from_secs(3600));
    assert!(
        tokio::time::timeout(Duration::from_secs(1), get(&c, CMS))
            .await
            .is_err(),
        "a response came before the delay was over"
    );
    s.set_response_delay(Duration::ZERO);
    assert_eq!(get(&c, CMS).await.0, 200);
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let s = kcache_apiserver::TestServer::start_with(test_builder().token("s3cret"))
        .await
        .unwrap();
    assert_eq!(get(&client(&s), CMS).await.0, 200);
    let anonymous = kcache_apiserver::client_for(&s.url(), None, "default").unwrap();
    let (code, status) = get(&anonymous, CMS).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (401, Some("Unauthorized"))
    );
}
