//! Patches: JSON merge patch, JSON patch, strategic merge patch (lists merged by the
//! `x-kubernetes-patch-strategy` and `-patch-merge-key` of the kind's schema, `crate::schema`;
//! lists of kinds without a schema are replaced; its `$retainKeys` and `$setElementOrder`
//! directives in directives.rs). Apply patches of objects and their status go through the
//! field manager (`crate::fieldmanager`); on the scale subresource they merge as JSON merge
//! patches.

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::schema::Ty;

mod directives;

use directives::{DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER};

/// The patch type, from the request's Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchKind {
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or("").trim();
        match ct {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

fn unprocessable(message: impl Into<String>) -> ApiError {
    ApiError::new(422, "Invalid", message)
}

/// Checks the shape of a patch. A JSON patch must be a list of operation objects, with the texts of Go's decoder as
/// `handlers/patch.go` reports them (400): under the `Strict` and `Warn` field validations the
/// patch is first decoded into `[]handlers.jsonPatchOp`, under `Ignore` only by
/// `jsonpatch.DecodePatch`.
///
/// A merge or strategic merge patch must be an object: under `Strict` and `Warn` it is first
/// decoded into a `map[string]interface {}`; otherwise (and for a `null` merge patch)
/// json-patch's `MergePatch` refuses it as `Invalid JSON Patch`. A `null` strategic merge
/// patch changes nothing.
pub(crate) fn check_patch(
    kind: PatchKind,
    patch: &Value,
    decoded_strictly: bool,
) -> Result<(), ApiError> {
    let go_kind = |v: &Value| match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    };
    if kind != PatchKind::Json {
        return match patch {
            Value::Object(_) => Ok(()),
            Value::Null if kind == PatchKind::Strategic => Ok(()),
            Value::Null => Err(ApiError::bad_request("Invalid JSON Patch")),
            _ if !decoded_strictly => Err(ApiError::bad_request("Invalid JSON Patch")),
            other => Err(ApiError::bad_request(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_kind(other)
            ))),
        };
    }
    let (list, item) = if decoded_strictly {
        ("[]handlers.jsonPatchOp", "handlers.jsonPatchOp")
    } else {
        ("jsonpatch.Patch", "jsonpatch.Operation")
    };
    let mismatch = match patch {
        Value::Null => None,
        Value::Array(ops) => ops
            .iter()
            .find(|op| !op.is_object() && !op.is_null())
            .map(|op| (go_kind(op), item)),
        other => Some((go_kind(other), list)),
    };
    let Some((kind, ty)) = mismatch else {
        return Ok(());
    };
    let text = format!("json: cannot unmarshal {kind} into Go value of type {ty}");
    Err(ApiError::bad_request(if decoded_strictly {
        format!("error decoding patch: {text}")
    } else {
        text
    }))
}

/// Applies `patch` to `target`, an object of type `ty`.
pub(crate) fn apply_patch(
    kind: PatchKind,
    target: &mut Value,
    patch: &Value,
    ty: Ty<'_>,
) -> Result<(), ApiError> {
    match kind {
        PatchKind::Merge | PatchKind::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(target, patch);
            Ok(())
        }
        PatchKind::Json => {
            let ops: json_patch::Patch = match patch {
                Value::Null => return Ok(()),
                patch => serde_json::from_value(patch.clone())
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
            };
            // handlers/patch.go answers a patch that does not apply with
            // `NewGenericServerResponse(422, ...)`: its generic text, not the patch library's.
            json_patch::patch(target, &ops).map_err(|e| {
                tracing::debug!(error = %e, "JSON patch does not apply");
                unprocessable("the server rejected our request due to an error in our request")
                    .with_details(serde_json::json!({}))
            })
        }
        PatchKind::Strategic => {
            if patch.is_null() {
                return Ok(());
            }
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "a strategic merge patch must be a JSON object",
                ));
            }
            strategic_merge(target, patch, ty)
        }
    }
}

/// Go's `%v` of a JSON value decoded into `interface{}` (maps with sorted keys, numbers as
/// decoded with `UnmarshalCaseSensitivePreserveInts`).
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(k, _)| *k);
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
        other => other.to_string(),
    }
}

/// `mergepatch.ErrBadPatchType`: an error the API server's patch handler does not convert
/// into a Status (`interpretStrategicMergePatchError` passes it on), so a 500 without reason.
fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> ApiError {
    let directive = match directive {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("%!s(int64={n})"),
        Value::Number(n) => format!("%!s(float64={n})"),
        Value::Bool(b) => format!("%!s(bool={b})"),
        other => format!("%!s({})", go_value(other)),
    };
    ApiError::unconverted(format!(
        "unknown patch type: {directive} in map: {}",
        go_value(&Value::Object(map.clone()))
    ))
}

fn strategic_merge(target: &mut Value, patch: &Value, ty: Ty<'_>) -> Result<(), ApiError> {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    // handleDirectiveInMergeMap: `replace` takes the patch as it is, `delete` empties the map,
    // anything else is ErrBadPatchType.
    if let Some(directive) = patch_map.get("$patch") {
        match directive.as_str() {
            Some("replace") => {
                let mut replaced = patch_map.clone();
                replaced.remove("$patch");
                *target = Value::Object(replaced);
            }
            Some("delete") => *target = Value::Object(Map::new()),
            _ => return Err(bad_patch_type(directive, patch_map)),
        }
        return Ok(());
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        return Ok(());
    };
    directives::retain_keys(target_map, patch_map)?;
    let mut ordered: Vec<&str> = Vec::new();
    for (k, order) in patch_map {
        if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let order = directives::element_order(order)?;
            set_element_order(
                target_map,
                field,
                order,
                patch_map.get(field),
                ty.field(field),
            )?;
            ordered.push(field);
        }
    }
    for (k, v) in patch_map {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (target_map.get_mut(field), v)
            {
                list.retain(|e| !remove.contains(e));
            }
            continue;
        }
        if k.starts_with('$') || ordered.contains(&k.as_str()) {
            continue;
        }
        match v {
            Value::Null => {
                target_map.remove(k);
            }
            Value::Array(items) => merge_array(target_map, k, items, ty.field(k))?,
            Value::Object(_) => strategic_merge(
                target_map.entry(k.clone()).or_insert(Value::Null),
                v,
                ty.field(k),
            )?,
            _ => {
                target_map.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(())
}

/// Merges the patch's list `items` into field `k` of `target_map` by the list's patch strategy
/// and merge key (`ty`, the field's type); lists that do not merge are replaced.
fn merge_array(
    target_map: &mut Map<String, Value>,
    k: &str,
    items: &[Value],
    ty: Ty<'_>,
) -> Result<(), ApiError> {
    let list = ty.list();
    let merge = list.is_some_and(|l| {
        l.patch_strategy
            .as_deref()
            .is_some_and(|s| s.split(',').any(|s| s == "merge"))
    });
    let key = list.and_then(|l| l.patch_merge_key.as_deref());
    match (target_map.get_mut(k), merge, key) {
        (Some(Value::Array(existing)), true, Some(key)) => {
            merge_list(existing, items, key, ty.items())?;
        }
        (Some(Value::Array(existing)), true, None) => {
            for item in items {
                if !existing.contains(item) {
                    existing.push(item.clone());
                }
            }
        }
        _ => {
            let cleaned: Vec<Value> = items
                .iter()
                .filter(|e| e.get("$patch").is_none())
                .cloned()
                .collect();
            target_map.insert(k.to_owned(), Value::Array(cleaned));
        }
    }
    Ok(())
}

/// `mergePatchIntoOriginal` for one `$setElementOrder/<field>` directive: the field's list is
/// merged with the patch's (if any), then its items put in the directive's `order`.
fn set_element_order(
    target_map: &mut Map<String, Value>,
    field: &str,
    order: &[Value],
    patch: Option<&Value>,
    ty: Ty<'_>,
) -> Result<(), ApiError> {
    let server = match target_map.get(field) {
        Some(Value::Array(items)) => items.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(directives::bad_order()),
    };
    let key = ty.list().and_then(|l| l.patch_merge_key.as_deref());
    match patch {
        Some(Value::Array(items)) => {
            directives::check_patch_order(items, order, key)?;
            merge_array(target_map, field, items, ty)?;
        }
        None => {}
        Some(_) => return Err(directives::bad_order()),
    }
    let Some(Value::Array(merged)) = target_map.remove(field) else {
        return Ok(());
    };
    let items = directives::order_items(merged, order, &server, key);
    target_map.insert(field.to_owned(), Value::Array(items));
    Ok(())
}

/// Merges the items of a list with a merge key (`mergeSliceWithSpecialElements`: items with
/// `$patch: delete` remove theirs, `$patch: replace` replaces the list with the others, any
/// other directive is an error).
fn merge_list(
    existing: &mut Vec<Value>,
    patch: &[Value],
    key: &str,
    item_ty: Ty<'_>,
) -> Result<(), ApiError> {
    let mut replace = false;
    for item in patch {
        match item.get("$patch") {
            None => {}
            Some(d) if d == "delete" || d == "replace" => replace |= d == "replace",
            Some(d) if d == "merge" => {
                return Err(ApiError::unconverted(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            Some(d) => {
                let map = item.as_object().cloned().unwrap_or_default();
                return Err(bad_patch_type(d, &map));
            }
        }
    }
    if replace {
        existing.clear();
    }
    for item in patch {
        let id = item.get(key);
        let pos = existing.iter().position(|e| e.get(key) == id);
        match item.get("$patch").and_then(Value::as_str) {
            Some("delete") => {
                if let Some(p) = pos {
                    existing.remove(p);
                }
                continue;
            }
            Some(_) => continue,
            None => {}
        }
        match pos {
            Some(p) => strategic_merge(&mut existing[p], item, item_ty)?,
            None => {
                let mut fresh = Value::Null;
                strategic_merge(&mut fresh, item, item_ty)?;
                existing.push(fresh);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_merges_containers_by_name() {
        let mut target = json!({"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}, "metadata": {"labels": {"x": "1"}}});
        let patch = json!({"$setElementOrder/containers": [{"name": "a"}], "spec": {"containers": [{"name": "a", "image": "a:2"}, {"name": "b", "$patch": "delete"}]}, "metadata": {"labels": {"x": null, "y": "2"}}});
        let pod = crate::schema::Schema::builtin()
            .root("", "v1", "Pod")
            .unwrap();
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(
            target["spec"]["containers"],
            json!([{"name": "a", "image": "a:2"}])
        );
        assert_eq!(target["metadata"]["labels"], json!({"y": "2"}));
    }

    // patch_test.go's "$setElementOrder" and "$retainKeys" cases, as the API server merges them.
    #[test]
    fn set_element_order_orders_merged_items_and_keeps_server_only_items_in_place() {
        let pod = crate::schema::Schema::builtin()
            .root("", "v1", "Pod")
            .unwrap();
        let mut target =
            json!({"spec": {"containers": [{"name": "a"}, {"name": "s"}, {"name": "b"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
            "containers": [{"name": "c", "image": "c:1"}]
        }});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        let names: Vec<&str> = target["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        // mergeSortedSlice: "s" (second in the live list) goes before "b" (third there).
        assert_eq!(names, ["s", "b", "c", "a"]);
        let mut target = json!({"metadata": {"finalizers": ["x", "y"]}});
        let patch = json!({"metadata": {"$setElementOrder/finalizers": ["y", "z", "x"], "finalizers": ["z"]}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(target["metadata"]["finalizers"], json!(["y", "z", "x"]));
        let patch = json!({"metadata": {"$setElementOrder/finalizers": "x"}});
        let err = apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "invalid patch format of setElementOrder list")
        );
    }

    #[test]
    fn a_patch_list_out_of_the_set_element_order_is_refused() {
        let pod = crate::schema::Schema::builtin()
            .root("", "v1", "Pod")
            .unwrap();
        let mut target = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "b", "image": "b:2"}, {"name": "a", "image": "a:2"}]
        }});
        let err = apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                500,
                "The order in patch list:\n[map[image:b:2 name:b] map[image:a:2 name:a]]\n doesn't match $setElementOrder list:\n[map[name:a] map[name:b]]\n"
            )
        );
    }

    #[test]
    fn retain_keys_clears_unlisted_fields_and_refuses_unlisted_patch_fields() {
        let deployment = crate::schema::Schema::builtin()
            .root("apps", "v1", "Deployment")
            .unwrap();
        let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}});
        let mut target = live.clone();
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, deployment).unwrap();
        assert_eq!(target["spec"]["strategy"], json!({"type": "Recreate"}));
        let mut target = live;
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}});
        let err = apply_patch(PatchKind::Strategic, &mut target, &patch, deployment).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "invalid patch format of retainKeys")
        );
    }

    #[test]
    fn strategic_merge_unions_merge_sets_and_replaces_atomic_lists_by_schema() {
        let pod = crate::schema::Schema::builtin()
            .root("", "v1", "Pod")
            .unwrap();
        let mut target = json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "a", "args": ["1", "2"]}]}});
        let patch = json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "a", "args": ["3"]}]}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(target["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(
            target["spec"]["containers"],
            json!([{"name": "a", "args": ["3"]}])
        );
    }

    #[test]
    fn strategic_merge_replaces_lists_of_kinds_without_a_schema() {
        let untyped = crate::schema::Schema::builtin().untyped();
        let mut target = json!({"spec": {"items": [{"name": "a", "v": 1}]}});
        let patch = json!({"spec": {"items": [{"name": "b"}]}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, untyped).unwrap();
        assert_eq!(target["spec"]["items"], json!([{"name": "b"}]));
    }

    // Directives of apimachinery's strategicpatch (patch_test.go: "$patch: replace" and
    // "$patch: delete" in maps and list items; mergepatch.ErrBadPatchType for others).
    #[test]
    fn strategic_merge_directives_replace_delete_or_are_refused() {
        let pod = crate::schema::Schema::builtin()
            .root("", "v1", "Pod")
            .unwrap();
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let mut target = live.clone();
        let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(target["metadata"]["labels"], json!({"c": "3"}));
        let mut target = live.clone();
        let patch = json!({"metadata": {"labels": {"$patch": "delete"}}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(target["metadata"]["labels"], json!({}));
        let mut target = live.clone();
        let patch = json!({"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}});
        apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap();
        assert_eq!(target["spec"]["containers"], json!([{"name": "c"}]));
        let mut target = live.clone();
        let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}});
        let err = apply_patch(PatchKind::Strategic, &mut target, &patch, pod).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                500,
                "unknown patch type: bogus in map: map[$patch:bogus name:a]"
            )
        );
    }
}
