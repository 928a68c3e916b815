//! `events.k8s.io/v1` Events: discovered, created, listed and watched like any resource.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{ListParams, PostParams, WatchEvent, WatchParams};

use crate::support::{client, start};

fn event(name: &str) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(Timestamp::now())),
        regarding: Some(ObjectReference {
            kind: Some("Pod".to_owned()),
            name: Some("web-0".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectReference::default()
        }),
        reason: Some("Started".to_owned()),
        action: Some("Start".to_owned()),
        note: Some("started web-0".to_owned()),
        type_: Some("Normal".to_owned()),
        reporting_controller: Some("example.com/controller".to_owned()),
        reporting_instance: Some("controller-0".to_owned()),
        ..Event::default()
    }
}

#[tokio::test]
async fn events_k8s_io_v1_events_are_discovered_created_listed_and_watched() {
    let s = start().await;
    let c = client(&s);
    let group = c
        .list_api_group_resources("events.k8s.io/v1")
        .await
        .unwrap();
    let events = group.resources.iter().find(|r| r.name == "events").unwrap();
    assert!(events.namespaced);
    assert_eq!(events.kind, "Event");

    let api: Api<Event> = Api::namespaced(c, "default");
    let mut watch = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = api
        .create(&PostParams::default(), &event("web-0.1"))
        .await
        .unwrap();
    assert_eq!(created.note.as_deref(), Some("started web-0"));
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let Some(WatchEvent::Added(seen)) = watch.try_next().await.unwrap() else {
        panic!("expected the Event added");
    };
    assert_eq!(seen.regarding.unwrap().name.as_deref(), Some("web-0"));
}
