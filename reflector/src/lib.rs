//! Kubernetes list-watch reflector over kube-client: keeps a store equal to the API server's
//! state through every failure. (Work in progress: the [`ListerWatcher`] contract is fixed.)

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod lister_watcher;

pub use lister_watcher::{
    Bookmark, INITIAL_EVENTS_END_ANNOTATION, ListFuture, ListOptions, ListPage, ListWatchError,
    ListerWatcher, ResourceVersionMatch, WatchEvent, WatchFuture, WatchStream,
};
