//! Lists of every pod from the watch cache: whole, and the first and a middle page of
//! `limit=500` (as Kubernetes 1.34, pages are read from the cache's snapshot at the first page's
//! resource version, KEP-4988; a list at resourceVersion=0 ignores the limit).

use serde::Deserialize;

use super::{Timing, read, time};
use crate::BoxError;
use crate::run::Cluster;

/// The page size of the paginated lists.
const PAGE: usize = 500;

#[derive(Deserialize)]
struct Page {
    metadata: PageMeta,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

/// Times the lists of `cluster`'s `pods` pods (nothing may write meanwhile: the middle page's
/// snapshot must stay in the cache's window, or storage would answer it).
pub(super) async fn measure(cluster: &Cluster, pods: usize) -> Result<Vec<Timing>, BoxError> {
    let router = cluster.server.router();
    let mut all = Vec::new();
    for (what, uri) in [
        (
            "whole, resourceVersion=0 (any), cache",
            "/api/v1/pods?resourceVersion=0",
        ),
        (
            "whole, resourceVersion unset (most recent), cache",
            "/api/v1/pods",
        ),
        (
            "limit=500, resourceVersion=0: limit ignored, whole, cache",
            "/api/v1/pods?limit=500&resourceVersion=0",
        ),
        (
            "limit=500, most recent: first page, cache snapshot",
            "/api/v1/pods?limit=500",
        ),
    ] {
        all.push(time(&router, format!("{pods} pods, {what}"), uri).await?);
    }
    // The continue token of the middle page, following the pages from the first.
    let middle = pods / PAGE / 2;
    let mut token = String::new();
    for _ in 0..middle {
        let uri = format!("/api/v1/pods?limit={PAGE}&continue={token}");
        let page: Page = serde_json::from_slice(&read(&router, &uri).await?)?;
        match page.metadata.continue_ {
            Some(next) if !next.is_empty() => token = next,
            _ => return Err("the list ended before its middle page".into()),
        }
    }
    let uri = format!("/api/v1/pods?limit={PAGE}&continue={token}");
    all.push(
        time(
            &router,
            format!(
                "{pods} pods, limit=500, most recent: page {} (continue), cache snapshot",
                middle + 1
            ),
            &uri,
        )
        .await?,
    );
    Ok(all)
}
