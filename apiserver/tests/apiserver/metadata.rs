//! Metadata-only answers (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`,
//! or `as=PartialObjectMetadataList` for a list), as client-go's metadata client, its metadata
//! informers and kube-rs's `Api<PartialObjectMeta<K>>` ask for them: each object's metadata
//! alone, the rest left on the server.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::{ListParams, WatchEvent, WatchParams};
use kube_core::PartialObjectMeta;
use serde_json::Value;

use crate::support::*;

const PODS: &str = "/api/v1/namespaces/default/pods";
/// What client-go's metadata client sends for a list: protobuf first, which is passed over.
const LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const ONE: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

async fn get(
    c: &kube_client::Client,
    path: &str,
    accept: &str,
) -> Result<Value, kube_client::Error> {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())
        .unwrap();
    c.request(req).await
}

#[tokio::test]
async fn a_metadata_list_holds_each_objects_metadata_and_nothing_else() {
    let s = start().await;
    let c = client(&s);
    create_pod(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let list = get(&c, PODS, LIST).await.unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["resourceVersion"].is_string(), "{list}");
    let item = &list["items"][0];
    assert_eq!(item["kind"], "PartialObjectMetadata");
    assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(item["metadata"]["name"], "a");
    assert_eq!(item["metadata"]["labels"]["app"], "web");
    assert!(
        item.get("spec").is_none() && item.get("status").is_none(),
        "{item}"
    );

    let one = get(&c, &format!("{PODS}/a"), ONE).await.unwrap();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "a");
    assert!(one.get("spec").is_none(), "{one}");
    let beta = get(&c, &format!("{PODS}/a"), &ONE.replace("v=v1", "v=v1beta1"))
        .await
        .unwrap();
    assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
}

#[tokio::test]
async fn kube_clients_metadata_api_lists_gets_and_watches_partial_object_metadata() {
    let s = start().await;
    let c = client(&s);
    create_pod(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let api = Api::<PartialObjectMeta<Pod>>::namespaced(c.clone(), "default");
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("a"));
    let one = api.get_metadata("a").await.unwrap();
    assert_eq!(
        one.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let rv = list.metadata.resource_version.unwrap();
    let mut events = api
        .watch_metadata(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    create_pod(&c, PODS, &pod("default", "b", "n1", "Running", "db")).await;
    let event = events.try_next().await.unwrap().unwrap();
    let WatchEvent::Added(added) = event else {
        panic!("{event:?}");
    };
    assert_eq!(added.metadata.name.as_deref(), Some("b"));
    assert_eq!(
        added.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
}

/// `handlers/response.go` (`asPartialObjectMetadata`, `asPartialObjectMetadataList`) ends each
/// message with the Go type of the object in parentheses: this server's messages lack it
/// (README "What still differs"), so only the part both give is asserted.
#[tokio::test]
async fn a_metadata_form_the_answer_cannot_take_is_406_not_acceptable() {
    let s = start().await;
    let c = client(&s);
    create_pod(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    for (path, accept, message) in [
        (
            format!("{PODS}/a"),
            LIST,
            "you requested PartialObjectMetadataList, but the requested object is not a list",
        ),
        (
            PODS.to_owned(),
            ONE,
            "you requested PartialObjectMetadata, but the requested object is a list",
        ),
    ] {
        let err = get(&c, &path, accept).await.unwrap_err();
        let kube_client::Error::Api(status) = err else {
            panic!("{err}");
        };
        assert_eq!(
            (status.code, status.reason.as_str()),
            (406, "NotAcceptable")
        );
        assert!(status.message.starts_with(message), "{}", status.message);
    }
}
