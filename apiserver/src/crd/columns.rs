//! The `additionalPrinterColumns` of a custom resource in `meta.k8s.io/v1` Tables, as the
//! apiextensions-apiserver's `tableconvertor`: the Name column, then the CRD's columns, each
//! cell the value at the column's `jsonPath` (Kubernetes' JSONPath subset: `.a.b`, `.a[0]`).

use serde_json::{Value, json};

/// The column definitions: Name, then the CRD's columns.
pub(crate) fn column_definitions(columns: &[Value]) -> Vec<Value> {
    let mut out = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace.", "priority": 0
    })];
    out.extend(columns.iter().map(|c| {
        json!({
            "name": c.get("name").cloned().unwrap_or_default(),
            "type": c.get("type").cloned().unwrap_or_default(),
            "format": c.get("format").cloned().unwrap_or(json!("")),
            "description": c.get("description").cloned().unwrap_or(json!("")),
            "priority": c.get("priority").cloned().unwrap_or(json!(0)),
        })
    }));
    out
}

/// The cells of `obj` for `columns` (after its name): each column's value, null when absent.
pub(crate) fn column_cells(columns: &[Value], obj: &Value) -> Vec<Value> {
    columns
        .iter()
        .map(|c| {
            let path = c.get("jsonPath").and_then(Value::as_str).unwrap_or("");
            lookup(obj, path).cloned().unwrap_or(Value::Null)
        })
        .collect()
}

/// The value at a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`).
fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (field, indexes) = part
            .split_once('[')
            .map_or((part, ""), |(f, rest)| (f, rest));
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        for index in indexes.split('[').filter(|i| !i.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().ok()?;
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn cells_follow_the_json_path_of_each_column() {
        let columns = [
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}),
            json!({"name": "First", "type": "string", "jsonPath": ".status.conditions[0].type"}),
            json!({"name": "Gone", "type": "string", "jsonPath": ".spec.missing"}),
        ];
        let obj = json!({"spec": {"size": 3}, "status": {"conditions": [{"type": "Ready"}]}});
        assert_eq!(
            super::column_cells(&columns, &obj),
            vec![json!(3), json!("Ready"), json!(null)]
        );
    }
}
