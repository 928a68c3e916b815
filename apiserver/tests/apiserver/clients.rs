//! Real clients against the server: kube-runtime's watcher.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use kube_runtime::watcher;

use crate::support::*;

async fn sync_until(
    stream: &mut (
             impl futures::Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Unpin
         ),
    state: &mut BTreeMap<String, String>,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) {
    let mut init: Option<BTreeMap<String, String>> = None;
    while !done(state) || init.is_some() {
        let event = tokio::time::timeout(std::time::Duration::from_secs(20), stream.next())
            .await
            .expect("watcher made no progress")
            .unwrap()
            .unwrap();
        let value = |cm: &ConfigMap| {
            cm.data
                .as_ref()
                .and_then(|d| d.get("v").cloned())
                .unwrap_or_default()
        };
        let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
        match event {
            watcher::Event::Init => init = Some(BTreeMap::new()),
            watcher::Event::InitApply(cm) => {
                if let Some(i) = init.as_mut() {
                    i.insert(name(&cm), value(&cm));
                }
            }
            watcher::Event::InitDone => *state = init.take().unwrap_or_default(),
            watcher::Event::Apply(cm) => {
                state.insert(name(&cm), value(&cm));
            }
            watcher::Event::Delete(cm) => {
                state.remove(&name(&cm));
            }
        }
    }
}

async fn watcher_sees_every_change(config: watcher::Config) {
    let s = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(s.client().unwrap());
    for i in 0..3 {
        let cm: ConfigMap = serde_json::from_value(configmap(&format!("cm-{i}"), "0")).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut stream = watcher(api.clone(), config).boxed();
    let mut state = BTreeMap::new();
    sync_until(&mut stream, &mut state, |s| s.len() == 3).await;
    let mut cm = api.get("cm-1").await.unwrap();
    cm.data.as_mut().unwrap().insert("v".into(), "1".into());
    api.replace("cm-1", &PostParams::default(), &cm)
        .await
        .unwrap();
    api.delete("cm-0", &DeleteParams::default()).await.unwrap();
    sync_until(&mut stream, &mut state, |s| {
        s.len() == 2 && s.get("cm-1").map(String::as_str) == Some("1")
    })
    .await;
    // After every watch ends and history is compacted, the watcher recovers and stays in sync.
    s.compact_now().await.unwrap();
    s.end_all_watches();
    let cm: ConfigMap = serde_json::from_value(configmap("cm-9", "9")).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    sync_until(&mut stream, &mut state, |s| {
        s.len() == 3 && s.contains_key("cm-9")
    })
    .await;
}

#[tokio::test]
async fn kube_runtime_watcher_syncs_and_sees_every_change() {
    watcher_sees_every_change(watcher::Config::default()).await;
}

#[tokio::test]
async fn kube_runtime_watcher_with_bookmarks_and_any_rv_syncs() {
    watcher_sees_every_change(watcher::Config::default().any_semantic().page_size(2)).await;
}

#[tokio::test]
async fn kube_runtime_watcher_streaming_list_syncs() {
    watcher_sees_every_change(watcher::Config::default().streaming_lists()).await;
}
