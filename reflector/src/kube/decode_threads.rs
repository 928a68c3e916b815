//! The decoding threads: one fixed set per process, shared by every [`KubeListerWatcher`]'s
//! lists and watches, so that every object is made on the same few threads.
//!
//! Why fixed threads and not tokio's blocking pool: glibc's malloc gives each thread an arena
//! and a freed block goes back to the arena it came from, where only that arena's threads
//! allocate again. The blocking pool starts and retires threads as work comes and goes, so a
//! list's objects were made in one set of arenas and a watch burst's replacements in others:
//! the old objects freed by the cache left holes that the decoding threads of the burst could not
//! reuse, and the process kept them (bench-e2e, 10,000 pods: RSS +27–47% over one burst, the
//! bytes in use unchanged). On fixed threads, what the cache frees is where the next decode
//! allocates.
//!
//! [`KubeListerWatcher`]: super::KubeListerWatcher

use std::sync::LazyLock;

use tokio::runtime::Runtime;

use super::request::join_error;
use crate::lister_watcher::ListWatchError;

/// The name of every decoding thread.
const THREAD_NAME: &str = "kcache-decode";

/// A runtime whose workers only run decoding jobs, one per core (at most 16); `None` if its
/// threads could not be started, and decoding then runs on tokio's blocking pool.
static DECODE_THREADS: LazyLock<Option<Runtime>> = LazyLock::new(|| {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(super::default_parallelism())
        .thread_name(THREAD_NAME)
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(err) => {
            tracing::warn!(
                error = &err as &dyn std::error::Error,
                "cannot start the decoding threads; decoding on tokio's blocking pool"
            );
            None
        }
    }
});

/// Runs `decode` on a decoding thread and waits for its result; a panic in it is an error.
pub(super) async fn decode_on_fixed_thread<R, F>(decode: F) -> Result<R, ListWatchError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let joined = match &*DECODE_THREADS {
        // The job never awaits: it holds its worker until it is done, as a blocking job would.
        Some(runtime) => runtime.spawn(async move { decode() }).await,
        None => tokio::task::spawn_blocking(decode).await,
    };
    joined.map_err(join_error)
}
