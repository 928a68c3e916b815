//! Tables as a cluster prints them: a custom resource's `date` columns (the default Age too) as
//! ages (apiextensions-apiserver's tableconvertor), the Event printer without a leading Name
//! column (printers.go's `printEvent`), and the Warning of a deprecated CRD version
//! (customresource_handler.go).

use serde_json::{Value, json};

use crate::crds::create_established;
use crate::kubectl::{apply_crd, kubectl, session};
use crate::support::*;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The Table of `path`: its column names and its first row's cells.
async fn table(c: &kube_client::Client, path: &str) -> (Vec<String>, Vec<Value>) {
    let req = http::Request::get(path)
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    let t: Value = c.request(req).await.unwrap();
    let names = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    (
        names,
        t["rows"][0]["cells"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    )
}

/// Whether `cell` is an age as `duration.HumanDuration` prints a fresh one (`0s` .. `119s`).
fn is_fresh_age(cell: &Value) -> bool {
    cell.as_str()
        .and_then(|s| s.strip_suffix('s'))
        .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n < 120))
}

fn crd(plural: &str, kind: &str, versions: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind}, "versions": versions},
    })
}

fn version(name: &str, storage: bool, extra: Value) -> Value {
    let mut v = json!({"name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    v
}

#[tokio::test]
async fn custom_resource_date_columns_print_as_ages() {
    let s = start().await;
    let c = client(&s);
    let columns = json!({"additionalPrinterColumns": [
        {"name": "Expires", "type": "date", "jsonPath": ".spec.expires"},
        {"name": "Started", "type": "date", "jsonPath": ".spec.started"},
        {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]});
    create_established(
        &c,
        &crd("timers", "Timer", json!([version("v1", true, columns)])),
    )
    .await;
    create_established(
        &c,
        &crd("plains", "Plain", json!([version("v1", true, json!({}))])),
    )
    .await;
    s.wait_served("example.com", "v1", "timers", true).await;
    s.wait_served("example.com", "v1", "plains", true).await;
    let timers = "/apis/example.com/v1/namespaces/default/timers";
    let (code, t) = post(
        &c,
        timers,
        &json!({"apiVersion": "example.com/v1", "kind": "Timer",
        "metadata": {"name": "t"}, "spec": {"expires": "tomorrow", "started": ""}}),
    )
    .await;
    assert_eq!(code, 201, "{t}");
    let (names, cells) = table(&c, timers).await;
    assert_eq!(names, ["Name", "Expires", "Started", "Created"]);
    assert_eq!(
        cells[..3],
        [json!("t"), json!("<invalid>"), json!("<unknown>")]
    );
    assert!(is_fresh_age(&cells[3]), "{cells:?}");

    let plains = "/apis/example.com/v1/namespaces/default/plains";
    let (code, p) = post(
        &c,
        plains,
        &json!({"apiVersion": "example.com/v1", "kind": "Plain",
        "metadata": {"name": "p"}}),
    )
    .await;
    assert_eq!(code, 201, "{p}");
    let (names, cells) = table(&c, plains).await;
    assert_eq!(names, ["Name", "Age"]);
    assert!(is_fresh_age(&cells[1]), "the default Age column: {cells:?}");
}

#[tokio::test]
async fn a_deprecated_crd_version_warns_on_every_request() {
    let s = start().await;
    let c = client(&s);
    let deprecated = json!({"deprecated": true});
    create_established(
        &c,
        &crd(
            "dials",
            "Dial",
            json!([
                version(
                    "v1alpha1",
                    false,
                    json!({"deprecated": true, "deprecationWarning": "alpha dials go away"})
                ),
                version("v1beta1", false, deprecated),
                version("v1", true, json!({})),
            ]),
        ),
    )
    .await;
    for v in ["v1alpha1", "v1beta1", "v1"] {
        s.wait_served("example.com", v, "dials", true).await;
    }
    let path = |v: &str| format!("/apis/example.com/{v}/namespaces/default/dials");
    let beta = "299 - \"example.com/v1beta1 Dial is deprecated; use example.com/v1 Dial\"";
    let dial =
        json!({"apiVersion": "example.com/v1beta1", "kind": "Dial", "metadata": {"name": "d"}});
    let body = serde_json::to_vec(&dial).unwrap();
    let (code, _, warnings) = request_warned(
        &c,
        "POST",
        &path("v1beta1"),
        Some(("application/json", body)),
    )
    .await;
    assert_eq!(
        (code, warnings.as_slice()),
        (201, [beta.to_owned()].as_slice())
    );
    let (code, _, warnings) = request_warned(&c, "GET", &path("v1beta1"), None).await;
    assert_eq!(
        (code, warnings.as_slice()),
        (200, [beta.to_owned()].as_slice())
    );
    let missing = format!("{}/nosuch", path("v1beta1"));
    let (code, _, warnings) = request_warned(&c, "GET", &missing, None).await;
    assert_eq!(
        (code, warnings.as_slice()),
        (404, [beta.to_owned()].as_slice())
    );
    let (_, _, warnings) = request_warned(&c, "GET", &path("v1alpha1"), None).await;
    assert_eq!(warnings, ["299 - \"alpha dials go away\""]);
    let (code, _, warnings) = request_warned(&c, "GET", &path("v1"), None).await;
    assert_eq!((code, warnings.len()), (200, 0), "{warnings:?}");
}

#[tokio::test]
async fn event_tables_have_no_leading_name_column() {
    let s = start().await;
    let c = client(&s);
    let events = "/api/v1/namespaces/default/events";
    let (code, e) = post(&c, events, &json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "type": "Warning", "reason": "BackOff", "message": "back-off", "count": 2,
        "firstTimestamp": k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "source": {"component": "kubelet"}})).await;
    assert_eq!(code, 201, "{e}");
    let (names, cells) = table(&c, events).await;
    assert_eq!(
        names,
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(
        cells[1..4],
        [json!("Warning"), json!("BackOff"), json!("pod/p")]
    );
    // Count an integer; Last Seen from First Seen when lastTimestamp is unset.
    assert_eq!(cells[8], 2);
    assert_eq!(cells[9], "e1");
    assert_eq!(cells[0], cells[7]);
    assert!(is_fresh_age(&cells[0]), "{cells:?}");
}

#[test]
fn kubectl_get_events_and_custom_resources_print_as_a_cluster_does() {
    let Some((kc, server, dir)) = session("cluster-tables") else {
        return;
    };
    let crd = crd("plains", "Plain", json!([version("v1", true, json!({}))]));
    apply_crd(&kc, &server, &dir, &crd);
    let file = dir.join("objects.json");
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "example.com/v1", "kind": "Plain", "metadata": {"name": "p1"}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
         "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
         "type": "Normal", "reason": "Pulled", "message": "pulled"},
    ]});
    std::fs::write(&file, objects.to_string()).unwrap();
    kubectl(&kc, &server, &["create", "-f", file.to_str().unwrap()]);
    let plains = kubectl(&kc, &server, &["get", "plains"]);
    let lines: Vec<Vec<&str>> = plains
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "AGE"], "{plains}");
    assert_eq!(lines[1][0], "p1", "{plains}");
    assert!(is_fresh_age(&json!(lines[1][1])), "{plains}");
    let events = kubectl(&kc, &server, &["get", "events"]);
    let header: Vec<&str> = events
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{events}"
    );
    assert!(events.contains("pod/p"), "{events}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
