//! Printers of the cluster-level kinds (`printers.go`: `printLimitRange`,
//! `printControllerRevision`, `printIngressClass`, `printCertificateSigningRequest`,
//! `printRuntimeClass`, `printFlowSchema`, `printPriorityLevelConfiguration`, `printCSIDriver`,
//! `printCSINode`, `printVolumeAttachment`, `printPodTemplate`, `printCSIStorageCapacity`).
//! The column descriptions are shortened from the fields' documentation.

use kube_core::Resource;
use serde_json::{Map, Value, json};

use super::cells::{NONE, age, at, containers, human_duration, int, items, labels, or_none, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const CREATED_AT: Column = Column(
    "Created At",
    "date",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);
const LIMIT_RANGE: &[Column] = &[CREATED_AT];
const CONTROLLER_REVISION: &[Column] = &[
    Column("Controller", "string", 0, "Controller of the object"),
    Column(
        "Revision",
        "integer",
        0,
        "Revision indicates the revision of the state represented by Data.",
    ),
    AGE,
];
const INGRESS_CLASS: &[Column] = &[
    Column(
        "Controller",
        "string",
        0,
        "controller refers to the name of the controller that should handle this class.",
    ),
    Column(
        "Parameters",
        "string",
        0,
        "parameters is a link to a custom resource containing additional configuration for the controller.",
    ),
    AGE,
];
const CSR: &[Column] = &[
    AGE,
    Column(
        "SignerName",
        "string",
        0,
        "signerName indicates the requested signer, and is a qualified name.",
    ),
    Column(
        "Requestor",
        "string",
        0,
        "Name of the user that created the request.",
    ),
    Column(
        "RequestedDuration",
        "string",
        0,
        "expirationSeconds is the requested duration of validity of the issued certificate.",
    ),
    Column(
        "Condition",
        "string",
        0,
        "Approved, Denied, Failed or Pending, and Issued once the certificate is set.",
    ),
];
const RUNTIME_CLASS: &[Column] = &[
    Column(
        "Handler",
        "string",
        0,
        "handler specifies the underlying runtime and configuration that the CRI implementation will use.",
    ),
    AGE,
];
const FLOW_SCHEMA: &[Column] = &[
    Column(
        "PriorityLevel",
        "string",
        0,
        "priorityLevelConfiguration should reference a PriorityLevelConfiguration in the cluster.",
    ),
    Column(
        "MatchingPrecedence",
        "string",
        0,
        "matchingPrecedence is used to choose among the FlowSchemas that match a given request.",
    ),
    Column(
        "DistinguisherMethod",
        "string",
        0,
        "distinguisherMethod defines how to compute the flow distinguisher for requests that match this schema.",
    ),
    AGE,
    Column(
        "MissingPL",
        "string",
        0,
        "indicates whether the referenced priority level object is missing",
    ),
];
const PRIORITY_LEVEL: &[Column] = &[
    Column(
        "Type",
        "string",
        0,
        "type indicates whether this priority level is subject to limitation on request execution.",
    ),
    Column(
        "NominalConcurrencyShares",
        "string",
        0,
        "nominalConcurrencyShares (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.",
    ),
    Column(
        "Queues",
        "string",
        0,
        "queues is the number of queues for this priority level.",
    ),
    Column(
        "HandSize",
        "string",
        0,
        "handSize is a small positive number that configures the shuffle sharding of requests into queues.",
    ),
    Column(
        "QueueLengthLimit",
        "string",
        0,
        "queueLengthLimit is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time.",
    ),
    AGE,
];
const CSI_DRIVER: &[Column] = &[
    Column(
        "AttachRequired",
        "boolean",
        0,
        "attachRequired indicates this CSI volume driver requires an attach operation.",
    ),
    Column(
        "PodInfoOnMount",
        "boolean",
        0,
        "podInfoOnMount indicates this CSI volume driver requires additional pod information during mount operations.",
    ),
    Column(
        "StorageCapacity",
        "boolean",
        0,
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report.",
    ),
    Column(
        "TokenRequests",
        "string",
        0,
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
    ),
    Column(
        "RequiresRepublish",
        "boolean",
        0,
        "requiresRepublish indicates the CSI driver wants NodePublishVolume being periodically called to reflect any possible change in the mounted volume.",
    ),
    Column(
        "Modes",
        "string",
        0,
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.",
    ),
    AGE,
];
const CSI_NODE: &[Column] = &[
    Column(
        "Drivers",
        "integer",
        0,
        "drivers is a list of information of all CSI Drivers existing on a node.",
    ),
    AGE,
];
const VOLUME_ATTACHMENT: &[Column] = &[
    Column(
        "Attacher",
        "string",
        0,
        "attacher indicates the name of the volume driver that MUST handle this request.",
    ),
    Column(
        "PV",
        "string",
        0,
        "persistentVolumeName represents the name of the persistent volume to attach.",
    ),
    Column(
        "Node",
        "string",
        0,
        "nodeName represents the node that the volume should be attached to.",
    ),
    Column(
        "Attached",
        "boolean",
        0,
        "attached indicates the volume is successfully attached.",
    ),
    AGE,
];
const POD_TEMPLATE: &[Column] = &[
    Column(
        "Containers",
        "string",
        0,
        "Names of each container in the template.",
    ),
    Column(
        "Images",
        "string",
        0,
        "Images referenced by each container in the template.",
    ),
    Column(
        "Pod Labels",
        "string",
        0,
        "The labels for the pod template.",
    ),
];
const CSI_STORAGE_CAPACITY: &[Column] = &[
    Column(
        "StorageClassName",
        "string",
        0,
        "storageClassName represents the name of the StorageClass that the reported capacity applies to.",
    ),
    Column(
        "Capacity",
        "string",
        0,
        "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.",
    ),
];

/// The printer of a cluster-level kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("", "LimitRange") => (LIMIT_RANGE, created_at),
        ("", "PodTemplate") => (POD_TEMPLATE, pod_template),
        ("apps", "ControllerRevision") => (CONTROLLER_REVISION, controller_revision),
        ("networking.k8s.io", "IngressClass") => (INGRESS_CLASS, ingress_class),
        ("certificates.k8s.io", "CertificateSigningRequest") => (CSR, csr),
        ("node.k8s.io", "RuntimeClass") => (RUNTIME_CLASS, runtime_class),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => (FLOW_SCHEMA, flow_schema),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            (PRIORITY_LEVEL, priority_level)
        }
        ("storage.k8s.io", "CSIDriver") => (CSI_DRIVER, csi_driver),
        ("storage.k8s.io", "CSINode") => (CSI_NODE, csi_node),
        ("storage.k8s.io", "VolumeAttachment") => (VOLUME_ATTACHMENT, volume_attachment),
        ("storage.k8s.io", "CSIStorageCapacity") => (CSI_STORAGE_CAPACITY, csi_storage_capacity),
        _ => return None,
    })
}

/// The creation time as a `metav1.Time` cell (RFC 3339).
fn created_at(obj: &Object, _data: &Data) -> Vec<Value> {
    let created = obj.meta().creation_timestamp.as_ref().map(|t| t.0);
    vec![serde_json::to_value(created).unwrap_or_default()]
}

fn pod_template(_obj: &Object, data: &Data) -> Vec<Value> {
    let [names, images] = containers(at(data, "/template/spec"));
    vec![
        names,
        images,
        or_none(&labels(at(data, "/template/metadata/labels"))),
    ]
}

/// `kind.group/name` of the controller owner (`formatResourceName` with its kind).
fn controller_revision(obj: &Object, data: &Data) -> Vec<Value> {
    let owners = obj.meta().owner_references.clone().unwrap_or_default();
    let controller = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .map_or_else(
            || NONE.to_owned(),
            |o| {
                let group = o.api_version.split_once('/').map_or("", |(g, _)| g);
                let kind = if group.is_empty() {
                    o.kind.to_ascii_lowercase()
                } else {
                    format!("{}.{group}", o.kind.to_ascii_lowercase())
                };
                format!("{kind}/{}", o.name)
            },
        );
    vec![json!(controller), json!(int(data, "/revision")), age(obj)]
}

fn ingress_class(obj: &Object, data: &Data) -> Vec<Value> {
    let parameters = match at(data, "/spec/parameters").filter(|p| !p.is_null()) {
        None => NONE.to_owned(),
        Some(p) => {
            let mut kind = p["kind"].as_str().unwrap_or("").to_owned();
            if let Some(group) = p["apiGroup"].as_str() {
                kind = format!("{kind}.{group}");
            }
            format!("{kind}/{}", p["name"].as_str().unwrap_or(""))
        }
    };
    vec![
        json!(text(data, "/spec/controller")),
        json!(parameters),
        age(obj),
    ]
}

/// `extractCSRStatus`.
fn csr_condition(data: &Data) -> String {
    let has = |kind: &str| items(data, "/status/conditions").any(|c| c["type"] == kind);
    let mut status = if has("Denied") {
        "Denied".to_owned()
    } else if has("Approved") {
        "Approved".to_owned()
    } else {
        "Pending".to_owned()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(data, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

fn csr(obj: &Object, data: &Data) -> Vec<Value> {
    let duration = at(data, "/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map_or_else(|| NONE.to_owned(), human_duration);
    vec![
        age(obj),
        json!(text(data, "/spec/signerName")),
        json!(text(data, "/spec/username")),
        json!(duration),
        json!(csr_condition(data)),
    ]
}

fn runtime_class(obj: &Object, data: &Data) -> Vec<Value> {
    vec![json!(text(data, "/handler")), age(obj)]
}

fn flow_schema(obj: &Object, data: &Data) -> Vec<Value> {
    let method = match text(data, "/spec/distinguisherMethod/type") {
        "" => NONE,
        m => m,
    };
    let missing = items(data, "/status/conditions")
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("Unknown");
    vec![
        json!(text(data, "/spec/priorityLevelConfiguration/name")),
        json!(int(data, "/spec/matchingPrecedence")),
        json!(method),
        age(obj),
        json!(missing),
    ]
}

fn priority_level(obj: &Object, data: &Data) -> Vec<Value> {
    let kind = text(data, "/spec/type");
    let limited = at(data, "/spec/limited").filter(|l| !l.is_null());
    let mut cells = [json!(NONE), json!(NONE), json!(NONE), json!(NONE)];
    if let Some(limited) = limited {
        cells[0] = json!(limited["nominalConcurrencyShares"].as_i64().unwrap_or(0));
        let queuing = &limited["limitResponse"]["queuing"];
        if !queuing.is_null() {
            for (i, key) in ["queues", "handSize", "queueLengthLimit"]
                .iter()
                .enumerate()
            {
                cells[i + 1] = json!(queuing[*key].as_i64().unwrap_or(0));
            }
        }
    }
    let mut out = vec![json!(kind)];
    out.extend(cells);
    out.push(age(obj));
    out
}

fn csi_driver(obj: &Object, data: &Data) -> Vec<Value> {
    let flag = |key: &str| {
        json!(
            at(data, &format!("/spec/{key}"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        )
    };
    let tokens: Vec<&str> = items(data, "/spec/tokenRequests")
        .filter_map(|t| t["audience"].as_str())
        .collect();
    let tokens = if tokens.is_empty() {
        "<unset>".to_owned()
    } else {
        tokens.join(",")
    };
    let modes: Vec<&str> = items(data, "/spec/volumeLifecycleModes")
        .filter_map(Value::as_str)
        .collect();
    vec![
        flag("attachRequired"),
        flag("podInfoOnMount"),
        flag("storageCapacity"),
        json!(tokens),
        flag("requiresRepublish"),
        or_none(&modes.join(",")),
        age(obj),
    ]
}

fn csi_node(obj: &Object, data: &Data) -> Vec<Value> {
    vec![json!(items(data, "/spec/drivers").count()), age(obj)]
}

fn volume_attachment(obj: &Object, data: &Data) -> Vec<Value> {
    vec![
        json!(text(data, "/spec/attacher")),
        json!(text(data, "/spec/source/persistentVolumeName")),
        json!(text(data, "/spec/nodeName")),
        json!(
            at(data, "/status/attached")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age(obj),
    ]
}

fn csi_storage_capacity(_obj: &Object, data: &Data) -> Vec<Value> {
    let capacity = match text(data, "/capacity") {
        "" => NONE,
        c => c,
    };
    vec![json!(text(data, "/storageClassName")), json!(capacity)]
}
