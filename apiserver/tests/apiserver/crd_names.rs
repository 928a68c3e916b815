//! CRD name conflicts, as apiextensions-apiserver's naming controller: a CRD asking for a name
//! another CRD of its group has accepted gets `NamesAccepted=False` with the conflict's reason
//! and message, keeps only its other names, is neither established nor served, and is accepted
//! once the other CRD is deleted or gives the name up.

use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::kubectl::{kubectl, session};
use crate::support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

/// A CRD of `gadgets.example.com` with the given names (plural and singular are its own).
fn gadget_crd(kind: &str, list_kind: &str, short_names: &[&str]) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": kind, "listKind": list_kind, "shortNames": short_names},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

/// The condition of `ty` in a CRD.
fn condition<'a>(crd: &'a Value, ty: &str) -> Option<&'a Value> {
    crd["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

/// The next state of the watched CRD whose condition `ty` has `status`.
async fn until_condition(lines: &mut WatchLines, ty: &str, status: &str) -> Value {
    loop {
        let e = next_change(lines).await;
        if condition(&e["object"], ty).is_some_and(|c| c["status"] == status) {
            return e["object"].clone();
        }
    }
}

async fn watch_gadgets_crd(c: &kube_client::Client) -> WatchLines {
    let path = format!("{CRDS}?watch=1&fieldSelector=metadata.name=gadgets.example.com");
    watch(c, &path).await
}

async fn a_crd_with_a_kind_in_use_waits_until_the_other_crd_is_deleted(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let mut lines = watch_gadgets_crd(&c).await;
    let (code, body) = post(&c, CRDS, &gadget_crd("Widget", "GadgetList", &["wd", "gd"])).await;
    assert_eq!(code, 201, "{body}");
    let crd = until_condition(&mut lines, "NamesAccepted", "False").await;
    let names = condition(&crd, "NamesAccepted").unwrap();
    // The short names conflict first, the kind last: the last conflict is the one reported.
    assert_eq!(names["reason"], "KindConflict", "{crd}");
    assert_eq!(names["message"], r#""Widget" is already in use"#);
    assert_eq!(
        crd["status"]["acceptedNames"],
        json!({"plural": "gadgets", "singular": "gadget", "kind": "", "listKind": "GadgetList"})
    );
    let established = condition(&crd, "Established").unwrap();
    assert_eq!(
        (
            &established["status"],
            &established["reason"],
            &established["message"]
        ),
        (
            &json!("False"),
            &json!("NotAccepted"),
            &json!("not all names are accepted")
        )
    );
    assert_eq!(get(&c, GADGETS).await.0, 404);
    let (_, discovery) = get(&c, "/apis/example.com/v1").await;
    let served: Vec<&Value> = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["name"])
        .collect();
    assert_eq!(served, [&json!("widgets"), &json!("widgets/status")]);

    let (code, _) = request(&c, "DELETE", &format!("{CRDS}/widgets.example.com"), None).await;
    assert_eq!(code, 200);
    let crd = until_condition(&mut lines, "Established", "True").await;
    assert_eq!(
        crd["status"]["acceptedNames"],
        json!({"plural": "gadgets", "singular": "gadget", "kind": "Widget", "listKind": "GadgetList", "shortNames": ["wd", "gd"]})
    );
    let names = condition(&crd, "NamesAccepted").unwrap();
    assert_eq!(
        (&names["status"], &names["reason"], &names["message"]),
        (
            &json!("True"),
            &json!("NoConflicts"),
            &json!("no conflicts found")
        )
    );
    let item =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "g1"}});
    let (code, created) = post(&c, GADGETS, &item).await;
    assert_eq!(code, 201, "{created}");
}

async fn names_of_crds_in_other_groups_do_not_conflict(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let mut other = gadget_crd("Widget", "WidgetList", &["wd"]);
    other["metadata"]["name"] = json!("gadgets.other.example.com");
    other["spec"]["group"] = json!("other.example.com");
    let crd = create_established(&c, &other).await;
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(
        condition(&crd, "NamesAccepted").unwrap()["reason"],
        "NoConflicts"
    );
}

on_every_backend!(
    a_crd_with_a_kind_in_use_waits_until_the_other_crd_is_deleted,
    names_of_crds_in_other_groups_do_not_conflict,
);

/// A CRD manifest of `<plural>.example.com` (singular: the plural without its `s`).
fn crd_yaml(plural: &str, kind: &str, short_names: &str) -> String {
    let singular = plural.trim_end_matches('s');
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}, shortNames: [{short_names}]}}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"
    )
}

#[test]
fn kubectl_sees_a_short_name_conflict_resolved_when_the_other_crd_gives_the_name_up() {
    let Some((kc, server, dir)) = session("crd-names") else {
        return;
    };
    let widgets = dir.join("widgets.yaml");
    let gadgets = dir.join("gadgets.yaml");
    std::fs::write(&widgets, crd_yaml("widgets", "Widget", "wd")).unwrap();
    std::fs::write(&gadgets, crd_yaml("gadgets", "Gadget", "wd, x")).unwrap();
    let (widgets, gadgets) = (widgets.to_str().unwrap(), gadgets.to_str().unwrap());
    kubectl(&kc, &server, &["apply", "-f", widgets]);
    let wait = |crd: &str, condition: &str| {
        let condition = format!("--for=condition={condition}");
        let crd = format!("crd/{crd}.example.com");
        kubectl(&kc, &server, &["wait", &condition, &crd, "--timeout=20s"])
    };
    wait("widgets", "Established");
    kubectl(&kc, &server, &["apply", "-f", gadgets]);
    wait("gadgets", "NamesAccepted=False");
    let jsonpath = r#"jsonpath={.status.conditions[?(@.type=="NamesAccepted")].reason}: {.status.conditions[?(@.type=="NamesAccepted")].message}; {.status.acceptedNames.kind} {.status.acceptedNames.shortNames}"#;
    let got = kubectl(
        &kc,
        &server,
        &["get", "crd", "gadgets.example.com", "-o", jsonpath],
    );
    assert_eq!(
        got,
        r#"ShortNamesConflict: "wd" is already in use; Gadget "#
    );
    let established = r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#;
    let got = kubectl(
        &kc,
        &server,
        &["get", "crd", "gadgets.example.com", "-o", established],
    );
    assert_eq!(got, "False");

    std::fs::write(
        dir.join("widgets.yaml"),
        crd_yaml("widgets", "Widget", "wg"),
    )
    .unwrap();
    kubectl(&kc, &server, &["apply", "-f", widgets]);
    wait("gadgets", "Established");
    let got = kubectl(
        &kc,
        &server,
        &["get", "crd", "gadgets.example.com", "-o", jsonpath],
    );
    assert_eq!(got, r#"NoConflicts: no conflicts found; Gadget ["wd","x"]"#);
    // The short name now finds the gadgets (kubectl fails on a resource it cannot find).
    kubectl(&kc, &server, &["get", "wd"]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
