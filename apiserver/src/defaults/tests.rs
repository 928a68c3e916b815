//! Cases from Kubernetes' `pkg/apis/core/v1/defaults_test.go` (TestSetDefaultPodSpec...,
//! TestSetDefaultContainer pull policies, TestSetDefaultService, TestSetDefaultNamespace,
//! TestSetDefaultSecret), `pkg/apis/apps/v1/defaults_test.go` (TestSetDefaultDeployment,
//! TestSetDefaultDaemonSetSpec, TestSetDefaultStatefulSet) and
//! `pkg/apis/batch/v1/defaults_test.go` (TestSetDefaultJob, TestSetDefaultCronJob); the
//! sources of the other groups' cases are named above each test.

use serde_json::{Value, json};

fn defaulted(api_version: &str, kind: &str, mut value: Value) -> Value {
    super::apply(api_version, kind, &mut value);
    value
}

#[test]
fn pod_spec_and_containers_get_kubernetes_defaults() {
    let pod = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}),
    );
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["enableServiceLinks"], true);
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
}

#[test]
fn image_pull_policy_is_always_for_latest_or_untagged_images() {
    for (image, policy) in [
        ("image", "Always"),
        ("image:latest", "Always"),
        ("registry:5000/image", "Always"),
        ("registry:5000/image:latest", "Always"),
        ("image:v1", "IfNotPresent"),
        ("registry:5000/image:v1", "IfNotPresent"),
        ("image@sha256:abcdef", "IfNotPresent"),
    ] {
        let pod = defaulted(
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"image": image}]}}),
        );
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"], policy,
            "{image}"
        );
    }
}

#[test]
fn given_values_are_kept() {
    let pod = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"restartPolicy": "Never", "containers": [{"image": "x", "imagePullPolicy": "Never"}]}}),
    );
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
}

#[test]
fn probes_and_volumes_get_defaults() {
    let pod = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"image": "x", "livenessProbe": {"httpGet": {"port": 80}}}],
               "volumes": [{"name": "a"}, {"name": "b", "configMap": {"name": "cm"}}]}}),
    );
    let probe = &pod["spec"]["containers"][0]["livenessProbe"];
    assert_eq!(
        (
            probe["timeoutSeconds"].clone(),
            probe["periodSeconds"].clone()
        ),
        (json!(1), json!(10))
    );
    assert_eq!(
        (
            probe["successThreshold"].clone(),
            probe["failureThreshold"].clone()
        ),
        (json!(1), json!(3))
    );
    assert_eq!(probe["httpGet"]["path"], "/");
    assert_eq!(probe["httpGet"]["scheme"], "HTTP");
    assert_eq!(pod["spec"]["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(pod["spec"]["volumes"][1]["configMap"]["defaultMode"], 420);
}

#[test]
fn requests_default_to_limits() {
    let pod = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"image": "x", "resources": {"limits": {"cpu": "100m"}}}]}}),
    );
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "100m"
    );
}

#[test]
fn deployment_defaults_and_its_template() {
    let d = defaulted(
        "apps/v1",
        "Deployment",
        json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
    );
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
    assert!(spec["template"]["spec"].get("enableServiceLinks").is_none());
}

#[test]
fn recreate_deployments_get_no_rolling_update() {
    let d = defaulted(
        "apps/v1",
        "Deployment",
        json!({"spec": {"strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn daemon_set_and_stateful_set_defaults() {
    let ds = defaulted("apps/v1", "DaemonSet", json!({"spec": {}}));
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
    let sts = defaulted("apps/v1", "StatefulSet", json!({"spec": {}}));
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(sts["spec"]["replicas"], 1);
}

#[test]
fn job_completions_and_parallelism_default_together() {
    let job = defaulted("batch/v1", "Job", json!({"spec": {}}));
    assert_eq!(
        (
            job["spec"]["completions"].clone(),
            job["spec"]["parallelism"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    let job = defaulted("batch/v1", "Job", json!({"spec": {"parallelism": 4}}));
    assert!(job["spec"].get("completions").is_none());
    assert_eq!(job["spec"]["parallelism"], 4);
    let job = defaulted("batch/v1", "Job", json!({"spec": {"completions": 5}}));
    assert_eq!(job["spec"]["parallelism"], 1);
}

#[test]
fn job_labels_come_from_its_template() {
    let job = defaulted(
        "batch/v1",
        "Job",
        json!({"metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}),
    );
    assert_eq!(job["metadata"]["labels"], json!({"a": "b"}));
}

#[test]
fn cron_job_defaults() {
    let cj = defaulted(
        "batch/v1",
        "CronJob",
        json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}}),
    );
    let spec = &cj["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    assert_eq!(
        spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
}

#[test]
fn service_defaults() {
    let svc = defaulted("v1", "Service", json!({"spec": {"ports": [{"port": 80}]}}));
    let spec = &svc["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    let lb = defaulted(
        "v1",
        "Service",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP"}}),
    );
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(
        lb["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        10800
    );
}

#[test]
fn namespace_gets_its_name_label_and_secret_its_type() {
    let ns = defaulted("v1", "Namespace", json!({"metadata": {"name": "team"}}));
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team"
    );
    let secret = defaulted("v1", "Secret", json!({}));
    assert_eq!(secret["type"], "Opaque");
}

// pkg/apis/autoscaling/v1/defaults_test.go (TestSetDefaultHPA) and
// pkg/apis/autoscaling/v2/defaults_test.go (TestSetDefaultHPA, TestGenerateScaleUpRules,
// TestGenerateScaleDownRules).
#[test]
fn autoscalers_get_min_replicas_a_cpu_target_and_complete_scaling_rules() {
    let v1 = defaulted(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        json!({"spec": {}}),
    );
    assert_eq!(v1["spec"], json!({"minReplicas": 1}));
    let v2 = defaulted(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"minReplicas": 3}}),
    );
    assert_eq!(v2["spec"]["minReplicas"], 3);
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(
        v2["spec"].get("behavior"),
        None,
        "no behavior, none defaulted"
    );
    let v2 = defaulted(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    let behavior = &v2["spec"]["behavior"];
    assert_eq!(
        behavior["scaleUp"],
        json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
    assert_eq!(
        behavior["scaleDown"],
        json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
}

// pkg/apis/storage/v1/defaults_test.go (TestSetDefaultVolumeBindingMode) and
// pkg/apis/core/v1/defaults_test.go (TestSetDefaultPersistentVolume,
// TestSetDefaultPersistentVolumeClaim).
#[test]
fn storage_classes_and_volumes_get_their_policies_modes_and_phase() {
    let sc = defaulted(
        "storage.k8s.io/v1",
        "StorageClass",
        json!({"provisioner": "p"}),
    );
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let pv = defaulted(
        "v1",
        "PersistentVolume",
        json!({"spec": {"hostPath": {"path": "/d"}}}),
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["spec"]["hostPath"]["type"], "");
    assert_eq!(pv["status"]["phase"], "Pending");
    let pvc = defaulted("v1", "PersistentVolumeClaim", json!({}));
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"]["phase"], "Pending");
}

// pkg/apis/networking/v1/defaults_test.go (TestSetDefaultNetworkPolicy) and
// pkg/apis/discovery/v1/defaults_test.go (TestSetDefaultEndpointPort).
#[test]
fn network_policies_get_protocols_and_policy_types_and_slices_port_defaults() {
    let ingress_only = defaulted(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}}),
    );
    assert_eq!(ingress_only["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(
        ingress_only["spec"]["ingress"][0]["ports"][0]["protocol"],
        "TCP"
    );
    let with_egress = defaulted(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"protocol": "UDP"}]}]}}),
    );
    assert_eq!(
        with_egress["spec"]["policyTypes"],
        json!(["Ingress", "Egress"])
    );
    assert_eq!(
        with_egress["spec"]["egress"][0]["ports"][0]["protocol"],
        "UDP"
    );
    let given = defaulted(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]}}),
    );
    assert_eq!(given["spec"]["policyTypes"], json!(["Egress"]));
    let slice = defaulted(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        json!({"addressType": "IPv4", "ports": [{"port": 80}]}),
    );
    assert_eq!(
        slice["ports"][0],
        json!({"port": 80, "name": "", "protocol": "TCP"})
    );
}
