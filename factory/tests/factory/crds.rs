//! A dynamic informer on a custom resource through its CustomResourceDefinition's creation,
//! object updates and the CRD's deletion (which deletes the objects).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kcache_informer::InformerEvent;
use kube_client::Api;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
use kube_runtime::wait::{await_condition, conditions};
use serde_json::json;

use super::{next_object, server, within};
use futures::StreamExt;
use kcache_factory::SharedInformerFactory;
use kcache_store::Store;

#[tokio::test]
async fn a_dynamic_informer_follows_a_custom_resource_through_its_crd_lifecycle() {
    let (_server, client) = server().await;
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = await_condition(
        crds.clone(),
        "widgets.example.com",
        conditions::is_crd_established(),
    );
    within("the CRD to be established", established)
        .await
        .unwrap();

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.dynamic_informer(&widgets, true);
    factory.start().unwrap();
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .values()
            .all(|s| *s)
    );
    let mut events = informer.event_stream().unwrap();

    let api = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &widgets);
    let widget = DynamicObject::new("w1", &widgets).data(json!({"spec": {"size": 3}}));
    api.create(&PostParams::default(), &widget).await.unwrap();
    let seen = next_object(&mut events).await;
    assert_eq!(seen.data["spec"]["size"], 3);
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 4}})),
    )
    .await
    .unwrap();
    let seen = next_object(&mut events).await;
    assert_eq!(seen.data["spec"]["size"], 4);

    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = loop {
        let event = within("the Widget deletion", events.next()).await.unwrap();
        if let InformerEvent::Delete(obj) = event {
            break obj;
        }
    };
    assert_eq!(deleted.object().metadata.name.as_deref(), Some("w1"));
    assert!(informer.indexer().list().is_empty());
    within("the factory to shut down", factory.shutdown()).await;
}
