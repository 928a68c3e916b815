//! CustomResourceDefinitions made by kube-rs: a `#[derive(CustomResource)]` type's
//! `CustomResourceExt::crd()` created through kube-client, waited for with kube-runtime's
//! `is_crd_established`, then its objects written and read typed, and the CRD deleted.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use kube_client::Api;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_runtime::wait::{await_condition, conditions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::*;

/// The spec of a Gadget.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kcache.dev",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus",
    shortname = "gd",
    printcolumn = r#"{"name":"Count","type":"integer","jsonPath":".spec.count"}"#
)]
pub(crate) struct GadgetSpec {
    count: i32,
    label: Option<String>,
}

/// The status of a Gadget.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub(crate) struct GadgetStatus {
    ready: bool,
}

#[tokio::test]
async fn kube_client_creates_a_derived_crd_and_uses_its_typed_api() {
    let s = start().await;
    let c = client(&s);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &Gadget::crd())
        .await
        .unwrap();
    let established = await_condition(
        crds.clone(),
        "gadgets.kcache.dev",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .expect("established within 10 s")
        .unwrap();

    let gadgets: Api<Gadget> = Api::namespaced(c.clone(), "default");
    let new = Gadget::new(
        "g1",
        GadgetSpec {
            count: 2,
            label: None,
        },
    );
    let created = gadgets.create(&PostParams::default(), &new).await.unwrap();
    assert_eq!(created.spec.count, 2);
    let patched = gadgets
        .patch_status(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert!(patched.status.unwrap().ready);
    assert_eq!(
        gadgets.list(&Default::default()).await.unwrap().items.len(),
        1
    );

    let (code, status) = post(
        &c,
        "/apis/kcache.dev/v1/namespaces/default/gadgets",
        &json!({"apiVersion": "kcache.dev/v1", "kind": "Gadget", "metadata": {"name": "bad"}, "spec": {"count": "two"}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.count");

    crds.delete("gadgets.kcache.dev", &DeleteParams::default())
        .await
        .unwrap();
    let gone = await_condition(crds, "gadgets.kcache.dev", conditions::is_deleted(""));
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("deleted within 10 s")
        .unwrap();
    let err = gadgets.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(err, kube_client::Error::Api(ref s) if s.code == 404),
        "{err}"
    );
}
