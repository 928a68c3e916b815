//! Printers of pods and workloads (`printPod`, `printDeployment`, `printReplicaSet`,
//! `printStatefulSet`, `printDaemonSet`, `printJob`, `printCronJob`).

use kube_core::Resource;
use serde_json::{Map, Value, json};

use super::cells::{
    NONE, age, age_of, at, containers, int, items, labels, or_none, selector, text,
};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const CONTAINERS: Column = Column(
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
const IMAGES: Column = Column(
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = Column(
    "Selector",
    "string",
    1,
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
);

const POD: &[Column] = &[
    Column(
        "Ready",
        "string",
        0,
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    Column(
        "Status",
        "string",
        0,
        "The aggregate status of the containers in this pod.",
    ),
    Column(
        "Restarts",
        "string",
        0,
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    Column(
        "IP",
        "string",
        1,
        "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    Column(
        "Node",
        "string",
        1,
        "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.",
    ),
    Column(
        "Nominated Node",
        "string",
        1,
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    Column(
        "Readiness Gates",
        "string",
        1,
        "If specified, all readiness gates will be evaluated for pod readiness.",
    ),
];

const DEPLOYMENT: &[Column] = &[
    Column("Ready", "string", 0, "Number of the pod with ready state"),
    Column(
        "Up-to-date",
        "integer",
        0,
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    Column(
        "Available",
        "integer",
        0,
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICA_SET: &[Column] = &[
    Column(
        "Desired",
        "integer",
        0,
        "Replicas is the number of desired replicas.",
    ),
    Column(
        "Current",
        "integer",
        0,
        "Replicas is the most recently observed number of replicas.",
    ),
    Column(
        "Ready",
        "integer",
        0,
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const STATEFUL_SET: &[Column] = &[
    Column("Ready", "string", 0, "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET: &[Column] = &[
    Column(
        "Desired",
        "integer",
        0,
        "The total number of nodes that should be running the daemon pod.",
    ),
    Column(
        "Current",
        "integer",
        0,
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    Column(
        "Ready",
        "integer",
        0,
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
    ),
    Column(
        "Up-to-date",
        "integer",
        0,
        "The total number of nodes that are running updated daemon pod",
    ),
    Column(
        "Available",
        "integer",
        0,
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    Column(
        "Node Selector",
        "string",
        0,
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const JOB: &[Column] = &[
    Column("Status", "string", 0, "Status of the job."),
    Column(
        "Completions",
        "string",
        0,
        "The desired number of successfully finished pods the job should be run with.",
    ),
    Column(
        "Duration",
        "string",
        0,
        "Time required to complete the job.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const CRON_JOB: &[Column] = &[
    Column(
        "Schedule",
        "string",
        0,
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    Column(
        "Timezone",
        "string",
        0,
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    Column(
        "Suspend",
        "boolean",
        0,
        "This flag tells the controller to suspend subsequent executions.",
    ),
    Column(
        "Active",
        "integer",
        0,
        "A list of pointers to currently running jobs.",
    ),
    Column(
        "Last Schedule",
        "string",
        0,
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// The printer of a workload kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("", "Pod") => (POD, pod),
        ("apps", "Deployment") => (DEPLOYMENT, deployment),
        ("apps", "ReplicaSet") => (REPLICA_SET, replica_set),
        ("apps", "StatefulSet") => (STATEFUL_SET, stateful_set),
        ("apps", "DaemonSet") => (DAEMON_SET, daemon_set),
        ("batch", "Job") => (JOB, job),
        ("batch", "CronJob") => (CRON_JOB, cron_job),
        _ => return None,
    })
}

/// A pod's STATUS cell: Terminating, a container's waiting or terminated reason, the pod's
/// reason, or its phase.
fn pod_status(obj: &Object, data: &Data) -> String {
    if obj.meta().deletion_timestamp.is_some() {
        return "Terminating".into();
    }
    let mut reason = match text(data, "/status/reason") {
        "" => text(data, "/status/phase").to_owned(),
        r => r.to_owned(),
    };
    for status in items(data, "/status/containerStatuses") {
        let state = &status["state"];
        if let Some(r) = state["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        } else if let Some(r) = state["terminated"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        }
    }
    reason
}

fn pod(obj: &Object, data: &Data) -> Vec<Value> {
    let total = items(data, "/spec/containers").count();
    let statuses: Vec<&Value> = items(data, "/status/containerStatuses").collect();
    let ready = statuses
        .iter()
        .filter(|s| s["ready"].as_bool() == Some(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|s| s["restartCount"].as_i64())
        .sum();
    let gates = items(data, "/spec/readinessGates").count();
    let gates = if gates == 0 {
        NONE.to_owned()
    } else {
        let conditions: Vec<&Value> = items(data, "/status/conditions").collect();
        let met = items(data, "/spec/readinessGates")
            .filter(|g| {
                conditions
                    .iter()
                    .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
            })
            .count();
        format!("{met}/{gates}")
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(pod_status(obj, data)),
        json!(restarts.to_string()),
        age(obj),
        or_none(text(data, "/status/podIP")),
        or_none(text(data, "/spec/nodeName")),
        or_none(text(data, "/status/nominatedNodeName")),
        json!(gates),
    ]
}

/// `cells`, then AGE, CONTAINERS and IMAGES of the pod template at `template`, then the
/// SELECTOR at `selector_at` if given.
fn with_template(
    obj: &Object,
    data: &Data,
    mut cells: Vec<Value>,
    template: &str,
    selector_at: Option<&str>,
) -> Vec<Value> {
    cells.push(age(obj));
    cells.extend(containers(at(data, template)));
    if let Some(pointer) = selector_at {
        cells.push(selector(at(data, pointer)));
    }
    cells
}

const TEMPLATE: &str = "/spec/template/spec";
const SELECTOR_AT: Option<&str> = Some("/spec/selector");

/// `ready/desired` replicas.
fn ready(data: &Data) -> Value {
    json!(format!(
        "{}/{}",
        int(data, "/status/readyReplicas"),
        int(data, "/spec/replicas")
    ))
}

fn deployment(obj: &Object, data: &Data) -> Vec<Value> {
    let cells = vec![
        ready(data),
        json!(int(data, "/status/updatedReplicas")),
        json!(int(data, "/status/availableReplicas")),
    ];
    with_template(obj, data, cells, TEMPLATE, SELECTOR_AT)
}

fn replica_set(obj: &Object, data: &Data) -> Vec<Value> {
    let cells = vec![
        json!(int(data, "/spec/replicas")),
        json!(int(data, "/status/replicas")),
        json!(int(data, "/status/readyReplicas")),
    ];
    with_template(obj, data, cells, TEMPLATE, SELECTOR_AT)
}

fn stateful_set(obj: &Object, data: &Data) -> Vec<Value> {
    with_template(obj, data, vec![ready(data)], TEMPLATE, None)
}

fn daemon_set(obj: &Object, data: &Data) -> Vec<Value> {
    let cells = vec![
        json!(int(data, "/status/desiredNumberScheduled")),
        json!(int(data, "/status/currentNumberScheduled")),
        json!(int(data, "/status/numberReady")),
        json!(int(data, "/status/updatedNumberScheduled")),
        json!(int(data, "/status/numberAvailable")),
        or_none(&labels(at(data, "/spec/template/spec/nodeSelector"))),
    ];
    with_template(obj, data, cells, TEMPLATE, SELECTOR_AT)
}

/// A job's STATUS cell from its conditions.
fn job_status(data: &Data) -> &'static str {
    let has = |t: &str| {
        items(data, "/status/conditions").any(|c| c["type"] == t && c["status"] == "True")
    };
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("Suspended") || at(data, "/spec/suspend") == Some(&Value::Bool(true)) {
        "Suspended"
    } else {
        "Running"
    }
}

fn job(obj: &Object, data: &Data) -> Vec<Value> {
    let completions = match at(data, "/spec/completions").and_then(Value::as_i64) {
        Some(n) => format!("{}/{n}", int(data, "/status/succeeded")),
        None => format!(
            "{}/1 of {}",
            int(data, "/status/succeeded"),
            int(data, "/spec/parallelism")
        ),
    };
    let start = text(data, "/status/startTime");
    let duration = match (start, text(data, "/status/completionTime")) {
        ("", _) => Value::String(String::new()),
        (start, "") => age_of(Some(start)),
        (start, end) => {
            let seconds = |t: &str| {
                t.parse::<k8s_openapi::jiff::Timestamp>()
                    .map(|t| t.as_second())
                    .ok()
            };
            match (seconds(start), seconds(end)) {
                (Some(s), Some(e)) => json!(super::cells::human_duration(e - s)),
                _ => Value::String(String::new()),
            }
        }
    };
    let cells = vec![json!(job_status(data)), json!(completions), duration];
    with_template(obj, data, cells, TEMPLATE, SELECTOR_AT)
}

fn cron_job(obj: &Object, data: &Data) -> Vec<Value> {
    let last = text(data, "/status/lastScheduleTime");
    let cells = vec![
        json!(text(data, "/spec/schedule")),
        or_none(text(data, "/spec/timeZone")),
        json!(
            at(data, "/spec/suspend")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        json!(items(data, "/status/active").count()),
        if last.is_empty() {
            or_none("")
        } else {
            age_of(Some(last))
        },
    ];
    let template = "/spec/jobTemplate/spec/template/spec";
    with_template(
        obj,
        data,
        cells,
        template,
        Some("/spec/jobTemplate/spec/selector"),
    )
}
