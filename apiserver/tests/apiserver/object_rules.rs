//! Rules every write of an object meets, over HTTP, as a Kubernetes 1.34 API server answers:
//! Secrets (`pkg/registry/core/secret/strategy.go`, ValidateSecret / ValidateSecretUpdate,
//! ValidateConfigMap), owner references and finalizers (`apimachinery/pkg/api/validation/
//! objectmeta.go`), the delete of an object whose last finalizer an update removes
//! (`store.go`'s `deleteWithoutFinalizers`), generateName (`storage/names/generate.go`) and
//! `dryRun` (ValidateDryRun of the write's options).

use base64::Engine as _;
use serde_json::{Value, json};

use crate::crds::{create_established, widget_crd};
use crate::support::*;

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const CMS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn secret(name: &str, ty: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": ty, "data": data})
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

/// Asserts a 422 Invalid with `message` and `causes`.
fn assert_invalid(code: u16, status: &Value, message: &str, causes: &[(&str, &str, &str)]) {
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    let causes: Vec<_> = causes.iter().map(|(f, r, m)| cause(f, r, m)).collect();
    assert_eq!(invalid(status), (message.to_owned(), causes));
}

/// TestSecretStrategy's stringData case (and `Convert_v1_Secret_To_core_Secret`): stringData
/// wins over data on a shared key, and is never stored nor answered; on create, update and
/// merge patch alike.
#[tokio::test]
async fn secret_string_data_is_folded_into_data() {
    let s = start().await;
    let c = client(&s);
    let mut body = secret("s", "Opaque", json!({"a": b64("old"), "b": b64("kept")}));
    body["stringData"] = json!({"a": "new", "c": "plain"});
    let (code, created) = post(&c, SECRETS, &body).await;
    assert_eq!(code, 201, "{created}");
    let want = json!({"a": b64("new"), "b": b64("kept"), "c": b64("plain")});
    assert_eq!(created["data"], want);
    assert!(created.get("stringData").is_none(), "{created}");
    let (_, read) = get(&c, &format!("{SECRETS}/s")).await;
    assert_eq!(read["data"], want);
    assert!(read.get("stringData").is_none(), "{read}");

    let mut update = read.clone();
    update["stringData"] = json!({"b": "changed"});
    let (code, updated) = put(&c, &format!("{SECRETS}/s"), &update).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["data"]["b"], b64("changed"));
    assert!(updated.get("stringData").is_none(), "{updated}");

    let merge = json!({"stringData": {"d": "patched"}});
    let path = format!("{SECRETS}/s");
    let (code, patched) = patch(&c, &path, "application/merge-patch+json", &merge).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["data"]["d"], b64("patched"));
    assert!(patched.get("stringData").is_none(), "{patched}");
}

/// TestValidateSecret: the keys each type needs, data keys as config keys.
#[tokio::test]
async fn validate_secret() {
    let s = start().await;
    let c = client(&s);
    let tls = secret("t", "kubernetes.io/tls", json!({"tls.crt": b64("c")}));
    let (code, status) = post(&c, SECRETS, &tls).await;
    assert_invalid(
        code,
        &status,
        "Secret \"t\" is invalid: data[tls.key]: Required value",
        &[("data[tls.key]", "FieldValueRequired", "Required value")],
    );
    let docker = secret(
        "d",
        "kubernetes.io/dockerconfigjson",
        json!({".dockerconfigjson": b64("x")}),
    );
    let (code, status) = post(&c, SECRETS, &docker).await;
    let message = "Invalid value: \"<secret contents redacted>\": invalid character 'x' looking for beginning of value";
    assert_invalid(
        code,
        &status,
        &format!("Secret \"d\" is invalid: data[.dockerconfigjson]: {message}"),
        &[("data[.dockerconfigjson]", "FieldValueInvalid", message)],
    );
    let token = secret("sa", "kubernetes.io/service-account-token", json!({}));
    let (code, status) = post(&c, SECRETS, &token).await;
    let field = "metadata.annotations[kubernetes.io/service-account.name]";
    assert_invalid(
        code,
        &status,
        &format!("Secret \"sa\" is invalid: {field}: Required value"),
        &[(field, "FieldValueRequired", "Required value")],
    );
    let bad_key = secret("k", "Opaque", json!({"a b": b64("x")}));
    let (code, status) = post(&c, SECRETS, &bad_key).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(invalid(&status).1[0].0, "data[a b]");
    let ok = secret(
        "ok",
        "kubernetes.io/basic-auth",
        json!({"username": b64("u")}),
    );
    assert_eq!(post(&c, SECRETS, &ok).await.0, 201);
}

/// TestValidateSecretUpdate: a Secret's type is immutable.
#[tokio::test]
async fn validate_secret_update() {
    let s = start().await;
    let c = client(&s);
    let (code, created) = post(&c, SECRETS, &secret("s", "Opaque", json!({}))).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["type"] = json!("example.com/other");
    let (code, status) = put(&c, &format!("{SECRETS}/s"), &changed).await;
    let message = "Invalid value: \"example.com/other\": field is immutable";
    assert_invalid(
        code,
        &status,
        &format!("Secret \"s\" is invalid: type: {message}"),
        &[("type", "FieldValueInvalid", message)],
    );
}

/// TestValidateConfigMap: keys are config keys, and not in both data and binaryData.
#[tokio::test]
async fn validate_config_map() {
    let s = start().await;
    let c = client(&s);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                    "data": {"a": "1"}, "binaryData": {"a": b64("1")}});
    let (code, status) = post(&c, CMS, &cm).await;
    assert_invalid(
        code,
        &status,
        "ConfigMap \"cm\" is invalid: [data[a]: Invalid value: \"a\": duplicate of key present in binaryData, binaryData[a]: Invalid value: \"a\": duplicate of key present in data]",
        &[
            (
                "data[a]",
                "FieldValueInvalid",
                "Invalid value: \"a\": duplicate of key present in binaryData",
            ),
            (
                "binaryData[a]",
                "FieldValueInvalid",
                "Invalid value: \"a\": duplicate of key present in data",
            ),
        ],
    );
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                     "data": {"..x": "1"}});
    let (code, status) = post(&c, CMS, &bad).await;
    assert_invalid(
        code,
        &status,
        "ConfigMap \"cm\" is invalid: data[..x]: Invalid value: \"..x\": must not start with '..'",
        &[(
            "data[..x]",
            "FieldValueInvalid",
            "Invalid value: \"..x\": must not start with '..'",
        )],
    );
}

/// TestValidateConfigMap's size case: at most 1 MiB of data, reported on the whole object
/// (an empty field, left out of the cause).
#[tokio::test]
async fn validate_config_map_size() {
    let s = start().await;
    let c = client(&s);
    let big = "x".repeat(1024 * 1024 + 1);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                    "data": {"a": big}});
    let (code, status) = post(&c, CMS, &cm).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "ConfigMap \"big\" is invalid: : Too long: must have at most 1048576 bytes"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueTooLong", "message": "Too long: must have at most 1048576 bytes"}])
    );
}

fn reference(kind: &str, name: &str, uid: &str, controller: bool) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "controller": controller})
}

/// TestValidateObjectMetaOwnerReferences: uid required, one controller at most; for
/// built-in kinds and custom resources alike.
#[tokio::test]
async fn validate_object_meta_owner_references() {
    let s = start().await;
    let c = client(&s);
    let mut cm = configmap("cm", "1");
    cm["metadata"]["ownerReferences"] = json!([reference("Pod", "p", "", false)]);
    let (code, status) = post(&c, CMS, &cm).await;
    assert_invalid(
        code,
        &status,
        "ConfigMap \"cm\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
        &[(
            "metadata.ownerReferences.uid",
            "FieldValueInvalid",
            "Invalid value: \"\": must not be empty",
        )],
    );
    let two = json!([
        reference("Pod", "a", "1", true),
        reference("Pod", "b", "2", true)
    ]);
    let message = r#"Invalid value: [{"apiVersion":"v1","kind":"Pod","name":"a","uid":"1","controller":true},{"apiVersion":"v1","kind":"Pod","name":"b","uid":"2","controller":true}]: Only one reference can have Controller set to true. Found "true" in references for Pod/a and Pod/b"#;
    cm["metadata"]["ownerReferences"] = two.clone();
    let (code, status) = post(&c, CMS, &cm).await;
    assert_invalid(
        code,
        &status,
        &format!("ConfigMap \"cm\" is invalid: metadata.ownerReferences: {message}"),
        &[("metadata.ownerReferences", "FieldValueInvalid", message)],
    );

    create_established(&c, &widget_crd()).await;
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w", "ownerReferences": two}, "spec": {"size": 1}});
    let (code, status) = post(&c, WIDGETS, &widget).await;
    assert_invalid(
        code,
        &status,
        &format!("Widget.example.com \"w\" is invalid: metadata.ownerReferences: {message}"),
        &[("metadata.ownerReferences", "FieldValueInvalid", message)],
    );
}

/// `dedupOwnerReferencesAndAddWarning`: an owner reference given twice is kept once, with a
/// warning (worded "after mutating admission" for a patch).
#[tokio::test]
async fn duplicate_owner_references_are_deduplicated_with_a_warning() {
    let s = start().await;
    let c = client(&s);
    let (_, owner) = post(&c, CMS, &configmap("owner", "1")).await;
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_owned();
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid});
    let mut cm = configmap("dup", "1");
    cm["metadata"]["ownerReferences"] = json!([owner, owner]);
    let body = Some(("application/json", cm.to_string().into_bytes()));
    let (code, created, warnings) = request_warned(&c, "POST", CMS, body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["ownerReferences"], json!([owner]));
    let text = format!(
        "API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {uid}"
    );
    assert_eq!(
        warnings,
        [format!(
            "299 - \".metadata.ownerReferences contains duplicate entries; {text}\""
        )]
    );
    let merge = json!({"metadata": {"ownerReferences": [owner, owner]}});
    let body = Some((
        "application/merge-patch+json",
        merge.to_string().into_bytes(),
    ));
    let (code, patched, warnings) = request_warned(&c, "PATCH", &format!("{CMS}/dup"), body).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["metadata"]["ownerReferences"], json!([owner]));
    assert_eq!(
        warnings,
        [format!(
            "299 - \".metadata.ownerReferences contains duplicate entries after mutating admission happens; {text}\""
        )]
    );
}

/// ValidateFinalizerName and core's validateKubeFinalizerName: a finalizer is a qualified
/// name, and on a built-in kind one without a path must be a standard one.
#[tokio::test]
async fn validate_finalizer_names() {
    let s = start().await;
    let c = client(&s);
    let mut cm = configmap("cm", "1");
    cm["metadata"]["finalizers"] = json!(["bad name"]);
    let (code, status) = post(&c, CMS, &cm).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(invalid(&status).1[0].0, "metadata.finalizers");

    cm["metadata"]["finalizers"] = json!(["kubernetes", "example.com"]);
    let (code, status) = post(&c, CMS, &cm).await;
    let message = "Invalid value: \"example.com\": name is neither a standard finalizer name nor is it fully qualified";
    assert_invalid(
        code,
        &status,
        &format!("ConfigMap \"cm\" is invalid: metadata.finalizers[1]: {message}"),
        &[("metadata.finalizers[1]", "FieldValueInvalid", message)],
    );
    cm["metadata"]["finalizers"] = json!(["kubernetes", "example.com/ok", "orphan"]);
    assert_eq!(post(&c, CMS, &cm).await.0, 201);
}

fn prefer_path(name: &str) -> String {
    format!(
        "299 - \"metadata.finalizers: \\\"{name}\\\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers\""
    )
}

/// The custom resource strategy's finalizer warnings: a custom object may carry a finalizer
/// without a path, with a `Warning` for each such name a write adds.
#[tokio::test]
async fn custom_objects_warn_of_finalizers_without_a_path() {
    let s = start().await;
    let c = client(&s);
    create_established(&c, &widget_crd()).await;
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "finalizers": ["example.com", "example.com/ok", "orphan"]},
        "spec": {"size": 1}});
    let body = Some(("application/json", widget.to_string().into_bytes()));
    let (code, created, warnings) = request_warned(&c, "POST", WIDGETS, body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(warnings, [prefer_path("example.com")]);

    let mut more = created.clone();
    more["metadata"]["finalizers"] = json!(["example.com", "zeta", "alpha"]);
    let body = Some(("application/json", more.to_string().into_bytes()));
    let (code, updated, warnings) = request_warned(&c, "PUT", &format!("{WIDGETS}/w"), body).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(warnings, [prefer_path("alpha"), prefer_path("zeta")]);
}

/// `store.go` Update: removing the last finalizer of an object being deleted deletes it
/// instead of writing it. Watchers see the mark (MODIFIED) and then only DELETED, carrying
/// the last stored state; the update answers 200 with the object it made.
async fn removing_the_last_finalizer_deletes_in_the_same_write(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let mut cm = configmap("held", "1");
    cm["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let (code, created) = post(&c, CMS, &cm).await;
    assert_eq!(code, 201, "{created}");
    let from = rv(&created);
    let mut lines = watch(&c, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    let path = format!("{CMS}/held");
    assert_eq!(request(&c, "DELETE", &path, None).await.0, 200);
    let marked = next_change(&mut lines).await;
    assert_eq!(marked["type"], "MODIFIED");
    let mut released = marked["object"].clone();
    released["metadata"]["finalizers"] = json!([]);
    let (code, answered) = put(&c, &path, &released).await;
    assert_eq!(code, 200, "{answered}");
    assert!(
        answered["metadata"]["deletionTimestamp"].is_string(),
        "{answered}"
    );
    let gone = next_change(&mut lines).await;
    assert_eq!(gone["type"], "DELETED", "{gone}");
    assert_eq!(
        gone["object"]["metadata"]["finalizers"],
        json!(["example.com/hold"])
    );
    assert_eq!(get(&c, &path).await.0, 404);
}

on_every_backend!(removing_the_last_finalizer_deletes_in_the_same_write);

/// `names.SimpleNameGenerator`: the prefix is cut to 58 characters before the 5 random ones.
#[tokio::test]
async fn generate_name_cuts_the_prefix_to_58_characters() {
    let s = start().await;
    let c = client(&s);
    let prefix = "a".repeat(70);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": prefix}});
    let (code, created) = post(&c, CMS, &cm).await;
    assert_eq!(code, 201, "{created}");
    let name = created["metadata"]["name"].as_str().unwrap();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"a".repeat(58)), "{name}");
    assert_eq!(created["metadata"]["generateName"], json!(prefix));
}

/// TestValidateObjectMeta's generateName cases: an invalid prefix is reported on
/// `metadata.generateName` (a trailing `-` is fine), then on the generated name.
#[tokio::test]
async fn validate_object_meta_generate_name() {
    let s = start().await;
    let c = client(&s);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Bad-"}});
    let (code, status) = post(&c, CMS, &cm).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    let causes = invalid(&status).1;
    let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(fields, ["metadata.generateName", "metadata.name"]);
    assert!(
        causes[0]
            .2
            .starts_with("Invalid value: \"Bad-\": a lowercase RFC 1123 subdomain"),
        "{causes:?}"
    );
    let ok = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "ok-"}});
    assert_eq!(post(&c, CMS, &ok).await.0, 201);
}

/// ValidateDryRun: any value but `All` is 422 on the options of the verb, and nothing is
/// written.
#[tokio::test]
async fn dry_run_accepts_only_all() {
    let s = start().await;
    let c = client(&s);
    let message = "Unsupported value: [\"x\"]: supported values: \"All\"";
    let expect = |code: u16, status: &Value, options: &str| {
        assert_invalid(
            code,
            status,
            &format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {message}"),
            &[("dryRun", "FieldValueNotSupported", message)],
        );
    };
    let (code, status) = post(&c, &format!("{CMS}?dryRun=x"), &configmap("new", "1")).await;
    expect(code, &status, "CreateOptions");
    assert_eq!(get(&c, &format!("{CMS}/new")).await.0, 404);

    let (_, created) = post(&c, CMS, &configmap("cm", "1")).await;
    let path = format!("{CMS}/cm");
    let mut changed = created.clone();
    changed["data"]["v"] = json!("2");
    let (code, status) = put(&c, &format!("{path}?dryRun=x"), &changed).await;
    expect(code, &status, "UpdateOptions");
    let merge = json!({"data": {"v": "3"}});
    let (code, status) = patch(
        &c,
        &format!("{path}?dryRun=All&dryRun=x"),
        "application/merge-patch+json",
        &merge,
    )
    .await;
    let both = "Unsupported value: [\"All\",\"x\"]: supported values: \"All\"";
    assert_invalid(
        code,
        &status,
        &format!("PatchOptions.meta.k8s.io \"\" is invalid: dryRun: {both}"),
        &[("dryRun", "FieldValueNotSupported", both)],
    );
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "img"}]}}}});
    let (code, deploy) = post(&c, deploys, &deploy).await;
    assert_eq!(code, 201, "{deploy}");
    let status_path = format!("{deploys}/d/status?dryRun=x");
    let (code, status) = put(&c, &status_path, &deploy).await;
    expect(code, &status, "UpdateOptions");
    let (code, status) = request(&c, "DELETE", &format!("{path}?dryRun=x"), None).await;
    expect(code, &status, "DeleteOptions");
    let (code, status) = request(&c, "DELETE", &format!("{CMS}?dryRun=x"), None).await;
    expect(code, &status, "DeleteOptions");
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["x"]});
    let body = Some(("application/json", options.to_string().into_bytes()));
    let (code, status) = request(&c, "DELETE", &path, body).await;
    expect(code, &status, "DeleteOptions");
    let (_, read) = get(&c, &path).await;
    assert_eq!(read["data"]["v"], "1", "nothing was written: {read}");

    // A DELETE body's dryRun: ["All"] is a dry run.
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]});
    let body = Some(("application/json", options.to_string().into_bytes()));
    assert_eq!(request(&c, "DELETE", &path, body).await.0, 200);
    assert_eq!(get(&c, &path).await.0, 200);
}

/// kubectl's ways to a Secret's `stringData`: `create secret generic --from-literal` and
/// `apply` of a manifest with `stringData`; both read back base64 in `data`.
#[test]
fn kubectl_secrets_fold_string_data() {
    use crate::kubectl::{kubectl, session};
    let Some((kc, server, dir)) = session("secrets") else {
        return;
    };
    kubectl(
        &kc,
        &server,
        &[
            "create",
            "secret",
            "generic",
            "lit",
            "--from-literal=user=admin",
        ],
    );
    let read = kubectl(
        &kc,
        &server,
        &["get", "secret", "lit", "-o", "jsonpath={.data.user}"],
    );
    assert_eq!(read, b64("admin"));
    let manifest = dir.join("secret.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  password: s3cret\n",
    )
    .unwrap();
    kubectl(&kc, &server, &["apply", "-f", manifest.to_str().unwrap()]);
    let read = kubectl(&kc, &server, &["get", "secret", "applied", "-o", "json"]);
    let read: Value = serde_json::from_str(&read).unwrap();
    assert_eq!(read["data"]["password"], b64("s3cret"));
    assert!(read.get("stringData").is_none(), "{read}");
}
