//! Fixtures shared by the tests and benches of every kcache crate (feature `testing`).
//!
//! [`pod`] builds a realistic Pod, about 8.5 KB of JSON, as a Deployment's ReplicaSet creates it and
//! a kubelet updates it: labels, an owner reference, two containers with environment,
//! resources, probes and mounts, volumes, managedFields, conditions and container statuses.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// The number of distinct nodes the fixture pods are spread over.
pub const NODES: usize = 20;

/// The namespace of fixture pod `i` when pods are spread over `namespaces` namespaces.
pub fn namespace_of(i: usize, namespaces: usize) -> String {
    format!("ns-{}", i % namespaces.max(1))
}

/// The JSON of fixture pod `i`, spread over `namespaces` namespaces and [`NODES`] nodes, with
/// resource version `resource_version`.
pub fn pod_json(i: usize, namespaces: usize, resource_version: u64) -> Value {
    let ns = namespace_of(i, namespaces);
    let app = format!("app-{}", i % 97);
    let hash = format!("{:08x}", (i as u64).wrapping_mul(0x9E37_79B9) & 0xffff_ffff);
    let rs = format!("{app}-{hash}");
    let name = format!("{rs}-{i:06}");
    let node = format!("node-{}", i % NODES);
    let tier = ["web", "api", "worker"][i % 3];
    let container = |n: usize, image: &str| {
        json!({
            "name": format!("c{n}"),
            "image": format!("registry.example.com/team/{image}:1.{}.{}", i % 7, n),
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info", format!("--shard={}", i % 16)],
            "ports": [{"name": "http", "containerPort": 8080 + n, "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                {"name": "GOMAXPROCS", "value": "2"},
                {"name": "FEATURE_FLAGS", "value": "alpha=false,beta=true,gamma=true"}
            ],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080 + n, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080 + n, "scheme": "HTTP"}, "initialDelaySeconds": 15, "periodSeconds": 20, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
            ],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}}
        })
    };
    let status = |n: usize| {
        json!({
            "name": format!("c{n}"),
            "ready": true,
            "restartCount": i % 3,
            "started": true,
            "image": format!("registry.example.com/team/svc{n}:1.{}.{}", i % 7, n),
            "imageID": format!("registry.example.com/team/svc{n}@sha256:{hash}{hash}{hash}{hash}{hash}{hash}{hash}{hash}"),
            "containerID": format!("containerd://{hash}{hash}{hash}{hash}{hash}{hash}{hash}{hash}"),
            "state": {"running": {"startedAt": "2026-11-01T10:00:00Z"}},
            "lastState": {}
        })
    };
    let field_keys = |n: usize| {
        json!({
            format!("k:{{\"name\":\"c{n}\"}}"): {
                ".": {}, "f:args": {}, "f:env": {".": {}, "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}, "k:{\"name\":\"NODE_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
                "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}},
                "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                "f:readinessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}},
                "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                "f:securityContext": {".": {}, "f:allowPrivilegeEscalation": {}, "f:capabilities": {".": {}, "f:drop": {}}, "f:readOnlyRootFilesystem": {}, "f:runAsNonRoot": {}},
                "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}, "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/app\"}": {".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}}}
            }
        })
    };
    let mut spec_fields = serde_json::Map::new();
    for n in 0..2 {
        if let Value::Object(m) = field_keys(n) {
            spec_fields.extend(m);
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{rs}-"),
            "namespace": ns,
            "uid": format!("{hash}-0000-4000-8000-{i:012}"),
            "resourceVersion": resource_version.to_string(),
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"app": app, "pod-template-hash": hash, "tier": tier, "team": format!("team-{}", i % 5)},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-10-30T08:00:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("{hash}-1111-4000-8000-{:012}", i % 97), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}, "f:team": {}}, "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{hash}\"}}"): {}}},
                              "f:spec": {"f:containers": spec_fields, "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}, "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}, "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                              "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "containers": [container(0, "svc0"), container(1, "svc1")],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": if i % 10 == 9 { "Pending" } else { "Running" },
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-01T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:00:05Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-01T10:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z"}
            ],
            "hostIP": format!("192.168.{}.{}", i % NODES / 250, i % NODES % 250 + 1),
            "podIP": format!("10.{}.{}.{}", i / 65536 % 256, i / 256 % 256, i % 256),
            "podIPs": [{"ip": format!("10.{}.{}.{}", i / 65536 % 256, i / 256 % 256, i % 256)}],
            "startTime": "2026-11-01T10:00:00Z",
            "containerStatuses": [status(0), status(1)],
            "qosClass": "Burstable"
        }
    })
}

/// Fixture pod `i` (see [`pod_json`]) with resource version `i + 1`.
pub fn pod(i: usize, namespaces: usize) -> Pod {
    pod_at(i, namespaces, i as u64 + 1)
}

/// Fixture pod `i` at `resource_version`.
pub fn pod_at(i: usize, namespaces: usize, resource_version: u64) -> Pod {
    match serde_json::from_value(pod_json(i, namespaces, resource_version)) {
        Ok(pod) => pod,
        Err(e) => unreachable!("the pod fixture is valid JSON for a Pod: {e}"),
    }
}

/// `n` fixture pods spread over `namespaces` namespaces, shared.
pub fn pods(n: usize, namespaces: usize) -> Vec<Arc<Pod>> {
    (0..n).map(|i| Arc::new(pod(i, namespaces))).collect()
}
