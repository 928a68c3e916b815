//! Pods and pod templates (`pkg/apis/core/v1/defaults.go`: `SetDefaults_Pod`,
//! `SetDefaults_PodSpec`, `SetDefaults_Container`, probes, volumes; container ports' `protocol`
//! from `k8s.io/api/core/v1` `+default` markers).

use serde_json::{Map, Value, json};

use super::{items_at, object_at, object_entry, set_default};
use crate::validation::VOLUME_SOURCES;

/// A Pod: its spec's defaults plus those only pods get (`enableServiceLinks`, requests from
/// limits, host ports on the host network).
pub(super) fn pod(obj: &mut Map<String, Value>) {
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    pod_spec(spec);
    set_default(spec, "enableServiceLinks", true);
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["containers", "initContainers"] {
        for container in items_at(spec, list) {
            requests_from_limits(container);
            if host_network {
                for port in items_at(container, "ports") {
                    if let Some(p) = port.get("containerPort").cloned() {
                        set_default(port, "hostPort", p);
                    }
                }
            }
        }
    }
}

/// The pod template of a workload (`spec.template`, `spec.jobTemplate.spec.template`).
pub(super) fn template(spec: &mut Map<String, Value>) {
    if let Some(pod_spec_map) = object_at(spec, "template").and_then(|t| object_at(t, "spec")) {
        pod_spec(pod_spec_map);
    }
}

/// `SetDefaults_PodSpec` and the defaults of its containers and volumes.
fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "dnsPolicy", "ClusterFirst");
    set_default(spec, "restartPolicy", "Always");
    set_default(spec, "terminationGracePeriodSeconds", 30);
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in items_at(spec, list) {
            self::container(container);
        }
    }
    for volume in items_at(spec, "volumes") {
        self::volume(volume);
    }
    super::quantity::pod_spec(spec);
}

/// Whether `image` pulls `:latest`: its tag is `latest`, or it has neither tag nor digest.
fn is_latest(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = if is_latest(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_default(c, "imagePullPolicy", policy);
    set_default(c, "terminationMessagePath", "/dev/termination-log");
    set_default(c, "terminationMessagePolicy", "File");
    for port in items_at(c, "ports") {
        set_default(port, "protocol", "TCP");
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = object_at(c, probe) {
            self::probe(p);
        }
    }
    // `SetDefaults_HTTPGetAction` applies to lifecycle hooks too.
    if let Some(lifecycle) = object_at(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(get) = object_at(lifecycle, hook).and_then(|h| object_at(h, "httpGet")) {
                http_get(get);
            }
        }
    }
    for env in items_at(c, "env") {
        if let Some(field_ref) = object_at(env, "valueFrom").and_then(|v| object_at(v, "fieldRef"))
        {
            set_default(field_ref, "apiVersion", "v1");
        }
    }
}

fn probe(p: &mut Map<String, Value>) {
    set_default(p, "timeoutSeconds", 1);
    set_default(p, "periodSeconds", 10);
    set_default(p, "successThreshold", 1);
    set_default(p, "failureThreshold", 3);
    if let Some(get) = object_at(p, "httpGet") {
        http_get(get);
    }
}

fn volume(v: &mut Map<String, Value>) {
    // A source given as `null` is no source (a nil pointer in Go): the volume gets `emptyDir`.
    if !VOLUME_SOURCES
        .iter()
        .any(|(s, _)| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(s) = object_at(v, source) {
            set_default(s, "defaultMode", 420);
        }
    }
    if let Some(path) = object_at(v, "hostPath") {
        set_default(path, "type", "");
    }
    if let Some(downward) = object_at(v, "downwardAPI") {
        field_ref_versions(downward);
    }
    if let Some(projected) = object_at(v, "projected") {
        for source in items_at(projected, "sources") {
            if let Some(downward) = object_at(source, "downwardAPI") {
                field_ref_versions(downward);
            }
            if let Some(token) = object_at(source, "serviceAccountToken") {
                set_default(token, "expirationSeconds", 3600);
            }
        }
    }
}

/// Requests a container does not give are its limits (`SetDefaults_Pod`).
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(resources) = object_at(c, "resources") else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = object_entry(resources, "requests") {
        for (name, quantity) in limits {
            requests.entry(name).or_insert(quantity);
        }
    }
}

/// `SetDefaults_ObjectFieldSelector` of the items of a downward API volume or projection.
fn field_ref_versions(downward: &mut Map<String, Value>) {
    for item in items_at(downward, "items") {
        if let Some(field_ref) = object_at(item, "fieldRef") {
            set_default(field_ref, "apiVersion", "v1");
        }
    }
}

/// `SetDefaults_HTTPGetAction`.
fn http_get(get: &mut Map<String, Value>) {
    set_default(get, "path", "/");
    set_default(get, "scheme", "HTTP");
}
