//! Server-side printing: the columns and rows of the `meta.k8s.io` Table a resource answers
//! with when a client asks for `as=Table` (what `kubectl get` shows), as Kubernetes'
//! `pkg/printers/internalversion/printers.go` for the built-in kinds and the CRD table
//! convertor (columns with JSON paths) for others.
//!
//! - workloads.rs: pods, deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs;
//! - core.rs: services, configmaps, secrets, namespaces, nodes, events (core and
//!   `events.k8s.io`), leases, ingresses;
//! - storage.rs: storageclasses, persistentvolumes, persistentvolumeclaims;
//! - network.rs: networkpolicies, endpointslices;
//! - scaling.rs: horizontalpodautoscalers, poddisruptionbudgets;
//! - cluster.rs: limitranges, podtemplates, controllerrevisions, ingressclasses,
//!   certificatesigningrequests, runtimeclasses, flowschemas, prioritylevelconfigurations,
//!   csidrivers, csinodes, volumeattachments, csistoragecapacities;
//! - admission.rs: mutating and validating webhook configurations, validatingadmissionpolicies
//!   and their bindings;
//! - cells.rs: what cells are made of (ages, counts, selectors, container lists).
//!
//! A resource without a printer of its own prints its `PrinterColumn`s (a custom resource's
//! `additionalPrinterColumns`; by default NAME and AGE).

use serde_json::{Map, Value, json};

use crate::object::Object;
use crate::resource::ResourceDef;

mod admission;
mod cells;
mod cluster;
mod core;
mod network;
mod scaling;
mod storage;
mod workloads;

/// What a row carries besides its cells (the `includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// Nothing.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses `includeObject` (absent or empty: Metadata); None for an unknown value.
    pub(crate) fn parse(value: Option<&str>) -> Option<Self> {
        match value.unwrap_or("") {
            "" | "Metadata" => Some(Self::Metadata),
            "None" => Some(Self::None),
            "Object" => Some(Self::Object),
            _ => None,
        }
    }
}

/// A built-in column: name, type, priority and description.
pub(crate) struct Column(&'static str, &'static str, i32, &'static str);

const NAME: Column = Column(
    "Name",
    "string",
    0,
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
);

const AGE: Column = Column(
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.",
);

/// The printer of a built-in kind: its columns after NAME, and the cells of an object after its
/// name (from its metadata and its other fields).
type Cells = fn(&Object, &Map<String, Value>) -> Vec<Value>;

fn builtin(def: &ResourceDef) -> Option<(&'static [Column], Cells)> {
    let kind = def.api.kind.as_str();
    let group = def.api.group.as_str();
    workloads::printer(group, kind)
        .or_else(|| core::printer(group, kind))
        .or_else(|| storage::printer(group, kind))
        .or_else(|| network::printer(group, kind))
        .or_else(|| scaling::printer(group, kind))
        .or_else(|| cluster::printer(group, kind))
        .or_else(|| admission::printer(group, kind))
}

fn column_json(name: &str, type_: &str, format: &str, priority: i32, description: &str) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

/// The column definitions of `def`'s table.
pub(crate) fn columns(def: &ResourceDef) -> Vec<Value> {
    let leading_name = !core::name_last(&def.api.group, &def.api.kind);
    let mut out = Vec::new();
    if leading_name {
        out.push(column_json(NAME.0, NAME.1, "name", NAME.2, NAME.3));
    }
    match builtin(def) {
        Some((columns, _)) => {
            out.extend(columns.iter().map(|c| {
                let format = if !leading_name && c.0 == NAME.0 {
                    "name"
                } else {
                    ""
                };
                column_json(c.0, c.1, format, c.2, c.3)
            }));
        }
        None => out.extend(
            def.printer_columns
                .iter()
                .map(|c| column_json(&c.name, &c.type_, &c.format, c.priority, &c.description)),
        ),
    }
    out
}

/// The row of `obj` (as stored) in `def`'s table: its cells printed from the stored object, as
/// Kubernetes prints the internal one, and the object or metadata it carries as `served` (in
/// the version the request addresses).
pub(crate) fn row(
    def: &ResourceDef,
    obj: &Object,
    served: &Object,
    include: IncludeObject,
) -> Value {
    let data = obj.data();
    let mut cells = Vec::new();
    if !core::name_last(&def.api.group, &def.api.kind) {
        cells.push(Value::String(cells::name(obj)));
    }
    match builtin(def) {
        Some((_, f)) => cells.extend(f(obj, &data)),
        None => {
            let value = obj.to_value();
            cells.extend(
                def.printer_columns
                    .iter()
                    .map(|c| cells::custom_cell(&c.type_, cells::at_path(&value, &c.json_path))),
            );
        }
    }
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = served.partial_metadata("v1");
        }
        IncludeObject::Object => row["object"] = served.to_value(),
    }
    row
}

#[cfg(test)]
mod tests {
    use kube_core::ApiResource;

    use super::*;
    use crate::resource::PrinterColumn;

    fn custom(columns: Vec<PrinterColumn>) -> ResourceDef {
        let api = ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        };
        ResourceDef {
            printer_columns: columns,
            ..ResourceDef::custom(api, true)
        }
    }

    fn widget() -> Object {
        Object::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "creationTimestamp": "2024-01-02T03:04:05Z"},
            "spec": {"size": 3}}))
        .unwrap_or_default()
    }

    #[test]
    fn resources_without_a_printer_print_name_and_age() {
        let def = custom(PrinterColumn::defaults());
        let names: Vec<Value> = columns(&def).iter().map(|c| c["name"].clone()).collect();
        assert_eq!(names, [json!("Name"), json!("Age")]);
        let row = row(&def, &widget(), &widget(), IncludeObject::None);
        let created: k8s_openapi::jiff::Timestamp = "2024-01-02T03:04:05Z".parse().unwrap();
        let age = cells::human_duration(
            k8s_openapi::jiff::Timestamp::now().as_second() - created.as_second(),
        );
        assert_eq!(row, json!({"cells": ["w", age]}));
    }

    /// tableconvertor_test.go's `Test_cellForJSONValue` cases (a `string` column's
    /// non-string values are printed as `Test_convertor_ConvertToTable` expects: JSON).
    #[test]
    fn cell_for_json_value() {
        use k8s_openapi::jiff::{SignedDuration, Timestamp};
        let from_now = |secs: i64| {
            let t = Timestamp::now()
                .checked_add(SignedDuration::from_secs(secs))
                .unwrap();
            json!(t.to_string())
        };
        let cases = [
            ("integer", json!(42), json!(42)),
            ("integer", json!(3.7), json!(3)),
            ("integer", json!(true), Value::Null),
            ("integer", json!("foo"), Value::Null),
            ("number", json!(42), json!(42.0)),
            ("number", json!(3.7), json!(3.7)),
            ("number", json!(true), Value::Null),
            ("number", json!("foo"), Value::Null),
            ("boolean", json!(42), Value::Null),
            ("boolean", json!(3.7), Value::Null),
            ("boolean", json!(true), json!(true)),
            ("boolean", json!("foo"), Value::Null),
            ("string", json!("foo"), json!("foo")),
            ("string", json!(1), json!("1")),
            ("string", json!([2, 3]), json!("[2,3]")),
            ("string", json!(["bar", "baz"]), json!(r#"["bar","baz"]"#)),
            ("date", json!(42), Value::Null),
            ("date", json!(3.7), Value::Null),
            ("date", json!(true), Value::Null),
            ("date", from_now(-(12 * 3600 + 30 * 60)), json!("12h")),
            ("date", from_now(12 * 3600 + 30 * 60), json!("<invalid>")),
            ("date", json!(""), json!("<unknown>")),
            ("date", json!("not a date"), json!("<invalid>")),
            ("unknown", json!("foo"), Value::Null),
            ("integer", json!([1]), Value::Null),
        ];
        for (type_, value, want) in cases {
            assert_eq!(
                cells::custom_cell(type_, value.clone()),
                want,
                "{type_} {value}"
            );
        }
    }

    #[test]
    fn printer_columns_take_their_cells_from_their_json_paths() {
        let size = PrinterColumn {
            name: "Size".into(),
            type_: "integer".into(),
            format: String::new(),
            description: "The size.".into(),
            priority: 0,
            json_path: ".spec.size".into(),
        };
        let def = custom(vec![size]);
        assert_eq!(columns(&def)[1]["type"], "integer");
        let row = row(&def, &widget(), &widget(), IncludeObject::Object);
        assert_eq!(row["cells"], json!(["w", 3]));
        assert_eq!(row["object"]["spec"]["size"], 3);
    }
}
