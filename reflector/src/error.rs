//! The reflector's error type and the classification of list/watch errors.

use kcache_store::StoreError;
use kube_core::Status;

use crate::lister_watcher::ListWatchError;

/// Why one round of [`Reflector::list_and_watch`](crate::Reflector::list_and_watch) failed. The
/// reflector hands it to its watch-error handler, backs off and starts again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectorError {
    /// The list (all its pages, and the retry at the newest resource version) failed.
    #[error("{name}: failed to list")]
    List {
        /// The reflector's name.
        name: String,
        /// What the lister answered.
        #[source]
        source: ListWatchError,
    },
    /// A watch could not be opened and the error is not one that is retried.
    #[error("{name}: failed to watch")]
    Watch {
        /// The reflector's name.
        name: String,
        /// What the watcher answered.
        #[source]
        source: ListWatchError,
    },
    /// The store refused the listed items.
    #[error("{name}: unable to sync list result")]
    Sync {
        /// The reflector's name.
        name: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// The store's resync failed.
    #[error("{name}: resync failed")]
    Resync {
        /// The reflector's name.
        name: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

impl ReflectorError {
    /// The list or watch error inside, if this is one.
    pub fn list_watch_error(&self) -> Option<&ListWatchError> {
        match self {
            Self::List { source, .. } | Self::Watch { source, .. } => Some(source),
            Self::Sync { .. } | Self::Resync { .. } => None,
        }
    }

    /// The reason a relist after this error is counted under
    /// ([`ReflectorMetrics::relist`](crate::ReflectorMetrics::relist)).
    pub(crate) fn relist_reason(&self) -> &'static str {
        match self {
            Self::List { .. } => "list_error",
            Self::Watch { .. } => "watch_error",
            Self::Sync { .. } => "sync_error",
            Self::Resync { .. } => "resync_error",
        }
    }
}

fn status(err: &ListWatchError) -> Option<&Status> {
    match err {
        ListWatchError::Api(s) => Some(s),
        _ => None,
    }
}

/// 410 with reason `Expired` (or `Gone`, older servers): the resource version is too old.
pub fn is_expired(err: &ListWatchError) -> bool {
    status(err).is_some_and(is_expired_status)
}

/// [`is_expired`] for a Status.
pub fn is_expired_status(s: &Status) -> bool {
    s.reason == "Expired" || s.reason == "Gone" || (s.reason.is_empty() && s.code == 410)
}

/// The server has not reached the requested resource version yet: a Status with the cause
/// `ResourceVersionTooLarge`, or a Timeout whose cause or message says "Too large resource
/// version" (the three forms servers have used).
pub fn is_too_large_resource_version(err: &ListWatchError) -> bool {
    status(err).is_some_and(is_too_large_resource_version_status)
}

/// [`is_too_large_resource_version`] for a Status.
pub fn is_too_large_resource_version_status(s: &Status) -> bool {
    const MSG: &str = "Too large resource version";
    let causes = s
        .details
        .as_ref()
        .map(|d| d.causes.as_slice())
        .unwrap_or_default();
    if causes.iter().any(|c| c.reason == "ResourceVersionTooLarge") {
        return true;
    }
    let is_timeout = s.reason == "Timeout" || (s.reason.is_empty() && s.code == 504);
    if !is_timeout {
        return false;
    }
    causes.iter().any(|c| c.message == MSG) || s.message.contains(MSG)
}

/// 429 Too Many Requests.
pub fn is_too_many_requests(err: &ListWatchError) -> bool {
    status(err).is_some_and(|s| s.code == 429 || s.reason == "TooManyRequests")
}

/// How long the server asked the client to wait before trying again: the `retryAfterSeconds`
/// of a Status (a 429 or 5xx from a server shedding load, which also sends it as the
/// `Retry-After` header), if it gave one. The reflector waits at least this long before its next
/// request, whatever its backoff says (client-go's `checkWait`).
pub fn retry_after(err: &ListWatchError) -> Option<std::time::Duration> {
    let seconds = status(err)?.details.as_ref()?.retry_after_seconds;
    (seconds > 0).then(|| std::time::Duration::from_secs(u64::from(seconds)))
}

/// The server could not be reached (connection refused or broken before an answer).
pub fn is_connection_error(err: &ListWatchError) -> bool {
    matches!(err, ListWatchError::Connection(_))
}

/// Whether a failed watch should be re-opened after a backoff, without a relist: connection
/// errors and 429 (client-go's `isWatchErrorRetriable`).
pub fn is_watch_error_retriable(err: &ListWatchError) -> bool {
    is_connection_error(err) || is_too_many_requests(err)
}

/// Builders of the Status errors servers send, for fakes and tests (feature `testing`).
#[cfg(any(test, feature = "testing"))]
pub mod status {
    use kube_core::Status;
    use kube_core::response::{StatusCause, StatusDetails, StatusSummary};

    /// A failure Status with `code`, `reason` and `message`.
    pub fn failure(code: u16, reason: &str, message: &str) -> Status {
        Status {
            status: Some(StatusSummary::Failure),
            code,
            message: message.to_owned(),
            metadata: None,
            reason: reason.to_owned(),
            details: None,
        }
    }

    fn details(causes: Vec<StatusCause>, retry_after_seconds: u32) -> StatusDetails {
        StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes,
            retry_after_seconds,
        }
    }

    /// 410 Expired: "too old resource version".
    pub fn expired(message: &str) -> Status {
        failure(410, "Expired", message)
    }

    /// 410 Gone (older servers' form of Expired).
    pub fn gone(message: &str) -> Status {
        failure(410, "Gone", message)
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests() -> Status {
        failure(
            429,
            "TooManyRequests",
            "too many requests, please try again later",
        )
    }

    /// 429 TooManyRequests asking the client to retry after `seconds` (`retryAfterSeconds`, as
    /// the API server's max-in-flight and priority-and-fairness filters send it).
    pub fn too_many_requests_retry_after(seconds: u32) -> Status {
        let mut s = too_many_requests();
        s.details = Some(details(Vec::new(), seconds));
        s
    }

    /// 500 InternalError.
    pub fn internal_error(message: &str) -> Status {
        failure(500, "InternalError", message)
    }

    /// 504 Timeout with the cause `ResourceVersionTooLarge` (current servers).
    pub fn too_large_resource_version() -> Status {
        let mut s = failure(504, "Timeout", "Too large resource version");
        s.details = Some(details(
            vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            1,
        ));
        s
    }

    /// 504 Timeout whose cause message says "Too large resource version" (servers 1.17–1.18.5).
    pub fn too_large_resource_version_cause_message() -> Status {
        let mut s = failure(504, "Timeout", "too large resource version");
        s.details = Some(details(
            vec![StatusCause {
                reason: String::new(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            1,
        ));
        s
    }

    /// 504 Timeout whose message says "Too large resource version" (servers before 1.17).
    pub fn too_large_resource_version_message() -> Status {
        let mut s = failure(504, "Timeout", "Too large resource version");
        s.details = Some(details(Vec::new(), 1));
        s
    }
}
