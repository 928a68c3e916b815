//! Whether a list is read from the watch cache or delegated to storage: Kubernetes 1.34's
//! `delegator.ShouldDelegateList` with the Cacher's `ShouldDelegateExactRV`,
//! `ShouldDelegateContinue` and `ShouldDelegateConsistentRead`, the feature gates
//! `ListFromCacheSnapshot` (beta, on) and `ConsistentListFromCache` (GA) at their 1.34 defaults,
//! and both storages able to tell their current revision (consistent reads are supported).

use crate::cache::{ReadAt, WatchCache};
use crate::continue_token::ContinueToken;
use crate::error::ApiError;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RvMatch {
    /// `Exact`: the state at exactly the resource version.
    Exact,
    /// `NotOlderThan`: any state at least as new.
    NotOlderThan,
}

/// A list's options, parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListParams {
    /// `resourceVersion` (`None`: not given).
    pub(crate) resource_version: Option<u64>,
    /// `resourceVersionMatch`.
    pub(crate) rv_match: Option<RvMatch>,
    /// `limit` (`None`: not given or not positive).
    pub(crate) limit: Option<usize>,
    /// `continue`, decoded.
    pub(crate) continue_token: Option<ContinueToken>,
}

impl ListParams {
    /// As storage's `ValidateListOptions`: a `continue` with a resource version other than
    /// "0" is 400.
    pub(super) fn validate(&self) -> Result<(), ApiError> {
        if self.continue_token.is_some() && self.resource_version.is_some_and(|rv| rv != 0) {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(())
    }

    /// The revision storage lists at (`ValidateListOptions`' `withRev`): the continue token's,
    /// an `Exact` one, or a legacy exact one (a resource version with a limit); `None`: its
    /// current revision.
    pub(super) fn storage_revision(&self) -> Option<u64> {
        if let Some(token) = &self.continue_token {
            return Some(token.revision);
        }
        match (self.rv_match, self.resource_version) {
            (Some(RvMatch::Exact), rv) => rv,
            (None, Some(rv)) if rv > 0 && self.limit.is_some() => Some(rv),
            _ => None,
        }
    }
}

/// How fresh the cache must be before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freshness {
    /// At the storage's current revision (a consistent read; when the cache does not get
    /// there in time, storage answers).
    Current,
    /// At least this resource version.
    AtLeast(u64),
}

/// A list the cache answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CacheRead {
    pub(super) freshness: Freshness,
    pub(super) at: ReadAt,
    /// The key the list starts at (a continue token's).
    pub(super) start: Option<String>,
    pub(super) limit: Option<usize>,
}

/// Where a list is served from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// Storage answers (Kubernetes: the etcd3 store).
    Storage,
    /// The watch cache answers.
    Cache(CacheRead),
}

/// Where `opts` are served from by `cache`; `selects_all`: the list has no label or field
/// selector.
pub(super) fn should_delegate_list(
    opts: &ListParams,
    cache: &WatchCache,
    selects_all: bool,
) -> Source {
    let source = match (opts.rv_match, opts.resource_version) {
        (Some(RvMatch::Exact), rv) => exact(cache, rv.unwrap_or(0), None, opts.limit),
        (Some(RvMatch::NotOlderThan), rv) => latest(Freshness::AtLeast(rv.unwrap_or(0)), opts),
        (None, rv) => match (&opts.continue_token, rv) {
            (Some(token), _) => exact(cache, token.revision, Some(token.start.clone()), opts.limit),
            // Legacy exact match.
            (None, Some(rv)) if rv > 0 && opts.limit.is_some() => {
                exact(cache, rv, None, opts.limit)
            }
            (None, None) => latest(Freshness::Current, opts),
            (None, Some(rv)) => latest(Freshness::AtLeast(rv), opts),
        },
    };
    // ResilientWatchCacheInitialization: a cache that has not had its first list hands
    // paginated lists without selectors over to storage.
    if !cache.is_ready() && selects_all && opts.limit.is_some() {
        return Source::Storage;
    }
    source
}

/// The Cacher's `shouldDelegateExactRV`: the cache answers when it has not reached `rv` yet
/// (it waits) or a snapshot covers it; storage when the snapshot left the window.
fn exact(cache: &WatchCache, rv: u64, start: Option<String>, limit: Option<usize>) -> Source {
    if cache.can_serve_exact(rv) {
        Source::Cache(CacheRead {
            freshness: Freshness::AtLeast(rv),
            at: ReadAt::Exact(rv),
            start,
            limit,
        })
    } else {
        Source::Storage
    }
}

/// A read of the cache's current state; as Kubernetes' `computeListLimit`, the limit of a
/// list at resource version "0" is ignored.
fn latest(freshness: Freshness, opts: &ListParams) -> Source {
    let limit = match opts.resource_version {
        Some(0) => None,
        _ => opts.limit,
    };
    Source::Cache(CacheRead {
        freshness,
        at: ReadAt::Latest,
        start: None,
        limit,
    })
}
