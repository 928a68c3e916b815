//! Printers of services, configmaps, secrets, namespaces, nodes, events, leases and ingresses
//! (`printService`, `printConfigMap`, `printSecret`, `printNamespace`, `printNode`,
//! `printEvent`, `printLease`, `printIngress`).

use serde_json::{Map, Value, json};

use super::cells::{NONE, age, age_of, at, int, items, labels, or_none, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const SERVICE: &[Column] = &[
    Column(
        "Type",
        "string",
        0,
        "type determines how the Service is exposed.",
    ),
    Column(
        "Cluster-IP",
        "string",
        0,
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    Column(
        "External-IP",
        "string",
        0,
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    Column(
        "Port(s)",
        "string",
        0,
        "The list of ports that are exposed by this service.",
    ),
    AGE,
    Column(
        "Selector",
        "string",
        1,
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];
const CONFIG_MAP: &[Column] = &[
    Column(
        "Data",
        "integer",
        0,
        "Data contains the configuration data.",
    ),
    AGE,
];
const SECRET: &[Column] = &[
    Column("Type", "string", 0, "The type of the secret"),
    Column("Data", "integer", 0, "Data contains the secret data."),
    AGE,
];
const NAMESPACE: &[Column] = &[
    Column("Status", "string", 0, "The status of the namespace"),
    AGE,
];
const NODE: &[Column] = &[
    Column("Status", "string", 0, "The status of the node"),
    Column("Roles", "string", 0, "The roles of the node"),
    AGE,
    Column(
        "Version",
        "string",
        0,
        "Kubelet Version reported by the node.",
    ),
    Column(
        "Internal-IP",
        "string",
        1,
        "List of addresses reachable to the node.",
    ),
    Column(
        "External-IP",
        "string",
        1,
        "List of addresses reachable to the node.",
    ),
    Column(
        "OS-Image",
        "string",
        1,
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    Column(
        "Kernel-Version",
        "string",
        1,
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    Column(
        "Container-Runtime",
        "string",
        1,
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];
const EVENT: &[Column] = &[
    Column(
        "Last Seen",
        "string",
        0,
        "The last time this event was recorded.",
    ),
    Column(
        "Type",
        "string",
        0,
        "Type of this event (Normal, Warning), new types could be added in the future.",
    ),
    Column(
        "Reason",
        "string",
        0,
        "This should be a short, machine understandable string that gives the reason for this event being generated.",
    ),
    Column("Object", "string", 0, "The object this Event is about."),
    Column(
        "Subobject",
        "string",
        1,
        "The subcomponent this Event is about.",
    ),
    Column("Source", "string", 1, "The component reporting this event."),
    Column(
        "Message",
        "string",
        0,
        "A human-readable description of the status of this operation.",
    ),
    Column(
        "First Seen",
        "string",
        1,
        "The first time this event was recorded.",
    ),
    Column(
        "Count",
        "string",
        1,
        "The number of times this event has occurred.",
    ),
    Column("Name", "string", 1, "The name of this event."),
];
const LEASE: &[Column] = &[
    Column("Holder", "string", 0, "The holder of the lease."),
    AGE,
];
const INGRESS: &[Column] = &[
    Column(
        "Class",
        "string",
        0,
        "The name of the IngressClass cluster resource.",
    ),
    Column(
        "Hosts",
        "string",
        0,
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    Column(
        "Address",
        "string",
        0,
        "Address is a list containing ingress points for the load-balancer",
    ),
    Column(
        "Ports",
        "string",
        0,
        "Ports of TLS configurations that open",
    ),
    AGE,
];

/// Whether the kind's table has no leading Name column but a Name column (priority 1) last:
/// the Event printer's (core and `events.k8s.io`, stored alike), whose first column is
/// Last Seen.
pub(super) fn name_last(group: &str, kind: &str) -> bool {
    kind == "Event" && matches!(group, "" | "events.k8s.io")
}

/// The printer of a core, coordination or networking kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("", "Service") => (SERVICE, service),
        ("", "ConfigMap") => (CONFIG_MAP, config_map),
        ("", "Secret") => (SECRET, secret),
        ("", "Namespace") => (NAMESPACE, namespace),
        ("", "Node") => (NODE, node),
        ("", "Event") => (EVENT, event),
        ("events.k8s.io", "Event") => (EVENT, event_v1),
        ("coordination.k8s.io", "Lease") => (LEASE, lease),
        ("networking.k8s.io", "Ingress") => (INGRESS, ingress),
        _ => return None,
    })
}

fn count(data: &Data, keys: &[&str]) -> usize {
    keys.iter()
        .filter_map(|k| data.get(*k).and_then(Value::as_object))
        .map(Map::len)
        .sum()
}

/// The load balancer ingress points of a status (`ip` or `hostname`).
fn ingress_points(data: &Data) -> Vec<String> {
    items(data, "/status/loadBalancer/ingress")
        .filter_map(|i| i["ip"].as_str().or_else(|| i["hostname"].as_str()))
        .map(str::to_owned)
        .collect()
}

fn service(obj: &Object, data: &Data) -> Vec<Value> {
    let service_type = text(data, "/spec/type");
    let mut external: Vec<String> = items(data, "/spec/externalIPs")
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let external = match service_type {
        "ExternalName" => text(data, "/spec/externalName").to_owned(),
        "LoadBalancer" => {
            external.extend(ingress_points(data));
            if external.is_empty() {
                "<pending>".to_owned()
            } else {
                external.join(",")
            }
        }
        _ if external.is_empty() => NONE.to_owned(),
        _ => external.join(","),
    };
    let ports: Vec<String> = items(data, "/spec/ports")
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", p["port"]),
                None => format!("{}/{protocol}", p["port"]),
            }
        })
        .collect();
    vec![
        json!(service_type),
        or_none(text(data, "/spec/clusterIP")),
        json!(external),
        or_none(&ports.join(",")),
        age(obj),
        or_none(&labels(at(data, "/spec/selector"))),
    ]
}

fn config_map(obj: &Object, data: &Data) -> Vec<Value> {
    vec![json!(count(data, &["data", "binaryData"])), age(obj)]
}

fn secret(obj: &Object, data: &Data) -> Vec<Value> {
    vec![
        json!(text(data, "/type")),
        json!(count(data, &["data"])),
        age(obj),
    ]
}

fn namespace(obj: &Object, data: &Data) -> Vec<Value> {
    vec![json!(text(data, "/status/phase")), age(obj)]
}

fn node(obj: &Object, data: &Data) -> Vec<Value> {
    let ready = items(data, "/status/conditions")
        .find(|c| c["type"] == "Ready")
        .map(|c| match c["status"].as_str() {
            Some("True") => "Ready",
            _ => "NotReady",
        })
        .unwrap_or("Unknown");
    let mut status = ready.to_owned();
    if at(data, "/spec/unschedulable") == Some(&Value::Bool(true)) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<&str> = kube_core::Resource::meta(obj)
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    roles.sort_unstable();
    let address = |kind: &str| {
        items(data, "/status/addresses")
            .find(|a| a["type"] == kind)
            .and_then(|a| a["address"].as_str())
            .unwrap_or(NONE)
            .to_owned()
    };
    vec![
        json!(status),
        or_none(&roles.join(",")),
        age(obj),
        json!(text(data, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        or_none(text(data, "/status/nodeInfo/osImage")),
        or_none(text(data, "/status/nodeInfo/kernelVersion")),
        or_none(text(data, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// `printEvent` (wide, as the server prints): First Seen from `firstTimestamp` or else
/// `eventTime`, Last Seen from `lastTimestamp` or else First Seen, a series' last observed time
/// and count taking over, a count of 0 printed as 1 (singleton events of the new API).
fn event(obj: &Object, data: &Data) -> Vec<Value> {
    let set = |pointer: &str| Some(text(data, pointer)).filter(|t| !t.is_empty());
    let first = age_of(set("/firstTimestamp").or_else(|| set("/eventTime")));
    let mut last = set("/lastTimestamp").map_or_else(|| first.clone(), |t| age_of(Some(t)));
    let mut count = int(data, "/count");
    if data.get("series").is_some_and(Value::is_object) {
        last = age_of(set("/series/lastObservedTime"));
        count = int(data, "/series/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = text(data, "/involvedObject/kind").to_ascii_lowercase();
    let involved = match text(data, "/involvedObject/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = match text(data, "/source/host") {
        "" => text(data, "/source/component").to_owned(),
        host => format!("{}, {host}", text(data, "/source/component")),
    };
    vec![
        last,
        json!(text(data, "/type")),
        json!(text(data, "/reason")),
        json!(involved),
        json!(text(data, "/involvedObject/fieldPath")),
        json!(source),
        json!(text(data, "/message").trim()),
        first,
        json!(count),
        json!(super::cells::name(obj)),
    ]
}

/// An `events.k8s.io/v1` Event, printed as the core Event it is stored as in Kubernetes (its
/// fields under their core names; the reporting controller and instance stand for an unset
/// source, as `formatEventSource`).
fn event_v1(obj: &Object, data: &Data) -> Vec<Value> {
    let mut core = Data::new();
    for (v1, name) in [
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("type", "type"),
        ("reason", "reason"),
        ("eventTime", "eventTime"),
        ("series", "series"),
    ] {
        if let Some(v) = data.get(v1) {
            core.insert(name.to_owned(), v.clone());
        }
    }
    let source = data.get("deprecatedSource");
    let pick = |key: &str, fallback: &str| {
        source
            .and_then(|s| s[key].as_str())
            .filter(|v| !v.is_empty())
            .or_else(|| data.get(fallback).and_then(Value::as_str))
            .unwrap_or("")
            .to_owned()
    };
    core.insert(
        "source".to_owned(),
        json!({"component": pick("component", "reportingController"), "host": pick("host", "reportingInstance")}),
    );
    event(obj, &core)
}

fn lease(obj: &Object, data: &Data) -> Vec<Value> {
    vec![or_none(text(data, "/spec/holderIdentity")), age(obj)]
}

fn ingress(obj: &Object, data: &Data) -> Vec<Value> {
    let hosts: Vec<&str> = items(data, "/spec/rules")
        .map(|r| r["host"].as_str().unwrap_or("*"))
        .collect();
    let ports = if items(data, "/spec/tls").next().is_some() {
        "80, 443"
    } else {
        "80"
    };
    vec![
        or_none(text(data, "/spec/ingressClassName")),
        json!(if hosts.is_empty() {
            "*".to_owned()
        } else {
            hosts.join(",")
        }),
        json!(ingress_points(data).join(",")),
        json!(ports),
        age(obj),
    ]
}
