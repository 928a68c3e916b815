//! Each kind's validation and immutable fields over HTTP: status code, reason, message and
//! causes as a real API server answers. Cases from Kubernetes'
//! `pkg/apis/apps/validation/validation_test.go` (TestValidateDeployment: missing selector,
//! negative replicas, selector not matching the template, immutable selector),
//! `pkg/apis/core/validation/validation_test.go` (TestValidatePodSpec: no containers, container
//! without image; TestValidatePodUpdate: restartPolicy; TestValidateConfigMapUpdate: immutable;
//! TestValidateObjectMetaUpdatePreventsDeletionFieldMutation / new finalizers) and
//! `pkg/apis/batch/validation/validation_test.go` (restartPolicy of a job template); services
//! from TestValidateService (ports required unless headless, port range, protocols).

use serde_json::{Value, json};

use crate::support::*;

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "img:1"}]}}}})
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

/// `LabelSelectorAsSelector(nil)` is `labels.Nothing()`: a workload without a selector selects
/// no template, and the selector is required but by `ValidateDaemonSetSpec`.
#[tokio::test]
async fn a_workload_without_selector_matches_no_template_and_is_required_but_for_daemonsets() {
    let s = start().await;
    let c = client(&s);
    let not_selected = cause(
        "spec.template.metadata.labels",
        "FieldValueInvalid",
        "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
    );
    let required = cause("spec.selector", "FieldValueRequired", "Required value");
    for (kind, path, message, causes) in [
        (
            "Deployment",
            DEPLOYS.to_owned(),
            "Deployment.apps \"d\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`]",
            vec![required, not_selected.clone()],
        ),
        (
            "DaemonSet",
            DEPLOYS.replace("deployments", "daemonsets"),
            "DaemonSet.apps \"d\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            vec![not_selected],
        ),
    ] {
        let mut d = deployment("d");
        d["kind"] = json!(kind);
        d["spec"].as_object_mut().unwrap().remove("selector");
        let (code, status) = post(&c, &path, &d).await;
        assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
        assert_eq!(invalid(&status), (message.to_owned(), causes), "{kind}");
    }
}

#[tokio::test]
async fn negative_replicas_and_a_selector_not_matching_the_template_are_422() {
    let s = start().await;
    let c = client(&s);
    let mut d = deployment("d");
    d["spec"]["replicas"] = json!(-3);
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let (code, status) = post(&c, DEPLOYS, &d).await;
    assert_eq!(code, 422);
    let (message, causes) = invalid(&status);
    assert_eq!(
        message,
        "Deployment.apps \"d\" is invalid: [spec.replicas: Invalid value: -3: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`]"
    );
    assert_eq!(causes[0].0, "spec.replicas");
    assert_eq!(causes[1].1, "FieldValueInvalid");
}

#[tokio::test]
async fn a_pod_without_containers_or_image_is_422() {
    let s = start().await;
    let c = client(&s);
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
    let (code, status) = post(&c, PODS, &pod).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "Pod \"p\" is invalid: spec.containers: Required value"
    );
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
    let (_, status) = post(&c, PODS, &pod).await;
    assert_eq!(
        invalid(&status).1,
        [cause(
            "spec.containers[0].image",
            "FieldValueRequired",
            "Required value"
        )]
    );
}

#[tokio::test]
async fn a_job_template_restarting_always_is_422() {
    let s = start().await;
    let c = client(&s);
    let job = json!({"metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (code, status) = post(&c, "/apis/batch/v1/namespaces/default/jobs", &job).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "Job.batch \"j\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
}

#[tokio::test]
async fn a_deployment_selector_is_immutable() {
    let s = start().await;
    let c = client(&s);
    let (_, d) = post(&c, DEPLOYS, &deployment("d")).await;
    let mut changed = d.clone();
    changed["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "x"}});
    changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "web", "tier": "x"});
    let (code, status) = put(&c, &format!("{DEPLOYS}/d"), &changed).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "Deployment.apps \"d\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
}

#[tokio::test]
async fn a_pod_restart_policy_may_not_change_but_its_image_may() {
    let s = start().await;
    let c = client(&s);
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}});
    post(&c, PODS, &pod).await;
    let patch_pod = |body: Value| {
        let c = c.clone();
        async move {
            patch(
                &c,
                &format!("{PODS}/p"),
                "application/merge-patch+json",
                &body,
            )
            .await
        }
    };
    let (code, status) = patch_pod(json!({"spec": {"restartPolicy": "Never"}})).await;
    assert_eq!(code, 422);
    let (_, causes) = invalid(&status);
    assert_eq!(
        (causes[0].0.as_str(), causes[0].1.as_str()),
        ("spec", "FieldValueForbidden")
    );
    assert!(causes[0].2.starts_with(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
    ));
    let (code, p) =
        patch_pod(json!({"spec": {"containers": [{"name": "c", "image": "i:2"}]}})).await;
    assert_eq!(
        (code, p["spec"]["containers"][0]["image"].as_str()),
        (200, Some("i:2"))
    );
}

/// `ValidatePodUpdate` munges only images, the active deadline, tolerations and a negative
/// grace period set to 1: an unbound pod gets its node through `pods/binding`, not an update.
#[tokio::test]
async fn a_pod_update_may_set_neither_its_node_nor_its_grace_period() {
    let s = start().await;
    let c = client(&s);
    let pod = json!({"metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c", "image": "i:1"}]}});
    post(&c, PODS, &pod).await;
    for change in [
        json!({"spec": {"nodeName": "n1"}}),
        json!({"spec": {"terminationGracePeriodSeconds": 5}}),
    ] {
        let (code, status) = patch(
            &c,
            &format!("{PODS}/p"),
            "application/merge-patch+json",
            &change,
        )
        .await;
        assert_eq!(code, 422, "{change}: {status}");
        let (_, causes) = invalid(&status);
        assert_eq!(
            (causes[0].0.as_str(), causes[0].1.as_str()),
            ("spec", "FieldValueForbidden"),
            "{change}"
        );
    }
    assert_eq!(
        get(&c, &format!("{PODS}/p")).await.1["spec"]["nodeName"],
        Value::Null
    );
}

#[tokio::test]
async fn an_immutable_configmap_keeps_its_data() {
    let s = start().await;
    let c = client(&s);
    let cm = json!({"metadata": {"name": "cm"}, "data": {"a": "1"}, "immutable": true});
    post(&c, CMS, &cm).await;
    let (code, status) = patch(
        &c,
        &format!("{CMS}/cm"),
        "application/merge-patch+json",
        &json!({"data": {"a": "2"}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "ConfigMap \"cm\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
}

#[tokio::test]
async fn an_update_with_another_uid_is_422() {
    let s = start().await;
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("cm", "1")).await;
    let mut other = cm.clone();
    other["metadata"]["uid"] = json!("11111111-2222-3333-4444-555555555555");
    let (code, status) = put(&c, &format!("{CMS}/cm"), &other).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "ConfigMap \"cm\" is invalid: metadata.uid: Invalid value: \"11111111-2222-3333-4444-555555555555\": field is immutable"
    );
}

#[tokio::test]
async fn no_finalizer_may_be_added_to_an_object_being_deleted() {
    let s = start().await;
    let c = client(&s);
    let cm = json!({"metadata": {"name": "cm", "finalizers": ["example.com/a"]}});
    assert_eq!(post(&c, CMS, &cm).await.0, 201);
    let (code, _) = request(&c, "DELETE", &format!("{CMS}/cm"), None).await;
    assert_eq!(code, 200);
    let (code, status) = patch(
        &c,
        &format!("{CMS}/cm"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).1,
        [cause(
            "metadata.finalizers",
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\"}"
        )]
    );
}

#[tokio::test]
async fn a_service_without_ports_or_with_a_bad_port_is_422() {
    let s = start().await;
    let c = client(&s);
    let services = "/api/v1/namespaces/default/services";
    let svc = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
    let (code, status) = post(&c, services, &svc(json!({"selector": {"app": "web"}}))).await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid(&status).0,
        "Service \"s\" is invalid: spec.ports: Required value"
    );
    let (_, status) = post(
        &c,
        services,
        &svc(json!({"ports": [{"port": 70000, "protocol": "HTTP"}]})),
    )
    .await;
    assert_eq!(
        invalid(&status).1,
        [
            cause(
                "spec.ports[0].port",
                "FieldValueInvalid",
                "Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.ports[0].protocol",
                "FieldValueNotSupported",
                "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ),
        ]
    );
    let (code, _) = post(&c, services, &svc(json!({"clusterIP": "None"}))).await;
    assert_eq!(code, 201, "a headless service needs no ports");
}
