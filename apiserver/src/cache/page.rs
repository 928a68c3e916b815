//! One page of a list read from the cache's state or a snapshot, in key order, as Kubernetes'
//! `Cacher.GetList` cuts it: at most `limit` objects passing the filter from the start key on,
//! and whether more follow (with the remaining count when nothing is filtered).

use std::ops::Bound;
use std::sync::Arc;

use super::snapshots::Objects;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;

/// What a list reads: the keys under a prefix (the namespace's, for a namespaced list) and the
/// filter the objects must pass.
#[derive(Debug)]
pub(crate) struct Scope<'a> {
    prefix: String,
    filter: &'a Filter,
    /// Whether objects must be checked against the filter (the prefix alone does not do it).
    filtering: bool,
}

impl<'a> Scope<'a> {
    /// The scope of a list of `def` with `filter`.
    pub(crate) fn new(def: &ResourceDef, filter: &'a Filter) -> Self {
        let prefix = match &filter.namespace {
            Some(ns) if def.namespaced => format!("{ns}/"),
            _ => String::new(),
        };
        let filtering = !filter.selects_all() || (filter.namespace.is_some() && !def.namespaced);
        Self {
            prefix,
            filter,
            filtering,
        }
    }
}

/// There are objects after a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct More {
    /// The key of the page's last object: the next page starts after it.
    pub(crate) last_key: Arc<str>,
    /// How many objects follow, when the list has no selector (`remainingItemCount`).
    pub(crate) remaining: Option<u64>,
}

/// A page of a list.
#[derive(Debug)]
pub(crate) struct Page {
    /// The objects, in key order.
    pub(crate) items: Vec<Arc<Object>>,
    /// Set when the list goes on after this page.
    pub(crate) more: Option<More>,
}

/// The page of `objects` in `scope` from key `start` (inclusive; the whole scope when `None`)
/// holding at most `limit` objects (all when `None`). As Kubernetes' cacher: with a selector,
/// a full page has more when any object (matching or not) follows it, and no remaining count.
pub(crate) fn page(
    objects: &Objects,
    scope: &Scope<'_>,
    start: Option<&str>,
    limit: Option<usize>,
) -> Page {
    let lower = match start {
        Some(start) if start > scope.prefix.as_str() => start,
        _ => scope.prefix.as_str(),
    };
    let mut in_scope = objects
        .range::<_, str>((Bound::Included(lower), Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(scope.prefix.as_str()));
    let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    let mut last_key = None;
    if !scope.filtering {
        for (key, obj) in in_scope.by_ref().take(limit) {
            items.push(Arc::clone(obj));
            last_key = Some(key);
        }
        let remaining = in_scope.count();
        let more = last_key.filter(|_| remaining > 0).map(|key| More {
            last_key: Arc::clone(key),
            remaining: u64::try_from(remaining).ok(),
        });
        return Page { items, more };
    }
    let mut more = false;
    for (key, obj) in in_scope {
        if items.len() >= limit {
            more = true;
            break;
        }
        if scope.filter.matches(obj) {
            items.push(Arc::clone(obj));
            last_key = Some(key);
        }
    }
    let more = last_key.filter(|_| more).map(|key| More {
        last_key: Arc::clone(key),
        remaining: None,
    });
    Page { items, more }
}
