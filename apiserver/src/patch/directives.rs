//! The strategic merge patch directives that client-side `kubectl apply` sends beside the
//! fields it changes (k8s.io/apimachinery `pkg/util/strategicpatch/patch.go`, merged with
//! `MergeParallelList` as the API server does): `$retainKeys` (the fields of a map to keep,
//! the others cleared: a Deployment strategy switched to `Recreate` loses its defaulted
//! `rollingUpdate`) and `$setElementOrder/<list>` (the order of a merged list's items). Neither
//! is ever stored.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// The directive listing the fields of a map to keep.
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of the directive ordering a list's items.
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
/// The prefix of the directive deleting values from a list of primitives.
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// `applyRetainKeysDirective`: every field of the patch (but nulls and other directives) must
/// be listed, 400 `invalid patch format of retainKeys` otherwise; fields of `target` not listed
/// are removed.
pub(super) fn retain_keys(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || ApiError::bad_request("invalid patch format of retainKeys");
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    let unlisted = patch.iter().any(|(k, v)| {
        !v.is_null()
            && k != RETAIN_KEYS
            && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !k.starts_with(SET_ELEMENT_ORDER)
            && !listed(k)
    });
    if unlisted {
        return Err(bad());
    }
    target.retain(|k, _| listed(k));
    Ok(())
}

/// `ErrBadPatchFormatForSetElementOrderList`: a directive, or the list it orders, that is not a
/// list (400).
pub(super) fn bad_order() -> ApiError {
    ApiError::bad_request("invalid patch format of setElementOrder list")
}

/// The list of a `$setElementOrder` directive.
pub(super) fn element_order(order: &Value) -> Result<&[Value], ApiError> {
    match order {
        Value::Array(items) => Ok(items),
        _ => Err(bad_order()),
    }
}

/// `validatePatchWithSetOrderList`: the patch's items (those without a `$patch` directive) must
/// come in the directive's `order`, identified by their merge `key` (or value); a 500 without
/// reason otherwise, the error the API server passes on unconverted.
pub(super) fn check_patch_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), ApiError> {
    let same = |a: &Value, b: &Value| match key {
        Some(k) => a.get(k) == b.get(k),
        None => a == b,
    };
    let items: Vec<&Value> = patch.iter().filter(|v| v.get("$patch").is_none()).collect();
    let (mut p, mut o) = (0, 0);
    while p < items.len() && o < order.len() {
        if same(items[p], &order[o]) {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() {
        let list = |l: &[Value]| crate::patch::go_value(&Value::Array(l.to_vec()));
        return Err(ApiError::unconverted(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            list(patch),
            list(order)
        )));
    }
    Ok(())
}

/// `normalizeElementOrder`: the items of `merged` listed in `order` (identified by their merge
/// `key`, or by value for primitives) in that order, the others (the server's) in their order
/// in `server` (the list before the patch), the two interleaved by the server's order
/// (`mergeSortedSlice`).
pub(super) fn order_items(
    merged: Vec<Value>,
    order: &[Value],
    server: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let id = |v: &Value| match key {
        Some(k) => v.get(k).cloned(),
        None => Some(v.clone()),
    };
    let index = |list: &[Value], v: &Value| {
        let wanted = id(v);
        list.iter().position(|x| id(x) == wanted)
    };
    let (mut patched, mut server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| index(order, v).is_some());
    patched.sort_by_key(|v| index(order, v).unwrap_or(usize::MAX));
    server_only.sort_by_key(|v| index(server, v).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patched.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        patched.into_iter().peekable(),
    );
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => matches!(
                (index(server, l), index(server, r)),
                (Some(li), Some(ri)) if li < ri
            ),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}
