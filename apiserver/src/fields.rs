//! Selectable fields: the field selector paths of the built-in kinds and the values an
//! [`Object`](crate::Object) extracts at them once, so that filtering never parses.

use std::sync::Arc;

use serde_json::{Map, Value};

/// Field values extracted once: `values[i]` is the value at `paths[i]` (None: absent or not a
/// scalar).
#[derive(Clone, Default)]
pub(crate) struct Selected {
    pub(crate) paths: Arc<[String]>,
    pub(crate) values: Box<[Option<Box<str>>]>,
}

impl Selected {
    pub(crate) fn extract(paths: Arc<[String]>, data: &Map<String, Value>) -> Self {
        let values = paths
            .iter()
            .map(|p| lookup(data, p).map(Into::into))
            .collect();
        Self { paths, values }
    }
}

/// The scalar at a dotted path of the top-level fields, as text.
pub(crate) fn lookup(data: &Map<String, Value>, path: &str) -> Option<String> {
    let mut parts = path.split('.');
    let mut cur = data.get(parts.next()?)?;
    for part in parts {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One shared copy of each list of field paths (there is one per resource).
pub(crate) fn intern<S: AsRef<str>>(paths: &[S]) -> Arc<[String]> {
    static INTERNED: parking_lot::Mutex<Vec<Arc<[String]>>> = parking_lot::Mutex::new(Vec::new());
    const MAX_INTERNED: usize = 256;
    let same = |known: &Arc<[String]>| {
        known.len() == paths.len() && known.iter().zip(paths).all(|(a, b)| a == b.as_ref())
    };
    let mut interned = INTERNED.lock();
    if let Some(known) = interned.iter().find(|k| same(k)) {
        return Arc::clone(known);
    }
    let new: Arc<[String]> = paths.iter().map(|p| p.as_ref().to_owned()).collect();
    if interned.len() < MAX_INTERNED {
        interned.push(Arc::clone(&new));
    }
    new
}

/// The field selectors of the built-in resources (besides `metadata.name` and
/// `metadata.namespace`), by `apiVersion` and `kind`.
const BUILTIN_FIELDS: &[(&str, &str, &[&str])] = &[
    ("v1", "Namespace", &["status.phase"]),
    (
        "v1",
        "Pod",
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
    ),
    ("v1", "Node", &["spec.unschedulable"]),
    ("v1", "Secret", &["type"]),
    (
        "v1",
        "Event",
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
    ),
    ("batch/v1", "Job", &["status.successful"]),
    (
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        &["spec.signerName"],
    ),
];

pub(crate) fn builtin_fields(api_version: &str, kind: &str) -> &'static [&'static str] {
    BUILTIN_FIELDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map_or(&[], |(_, _, fields)| fields)
}

/// The shared list of the field selector paths of the built-in resource of `api_version` and
/// `kind` (empty for others): what [`Object`](crate::Object)s extract when they are built.
pub(crate) fn builtin_field_paths(api_version: &str, kind: &str) -> Arc<[String]> {
    intern(builtin_fields(api_version, kind))
}
