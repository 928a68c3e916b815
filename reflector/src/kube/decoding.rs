//! Where decoding runs: on the runtime's own worker threads, as a task of its own.
//!
//! Why not tokio's blocking pool: glibc's malloc gives each thread an arena, and a freed block
//! goes back to the arena it came from, where only that arena's threads allocate again. The
//! blocking pool starts and retires threads as work comes and goes, so a list's objects were
//! made in one set of arenas and a watch burst's replacements in others: the old objects freed
//! by the cache left holes that the threads decoding the burst could not reuse, and the process
//! kept them (bench-e2e, 20,000 pods: RSS +34% over one burst of 40,000 events, the bytes in
//! use unchanged). The worker threads live as long as the runtime, so what the cache frees is
//! where the next decode allocates; and an event decoded as a task of its own needs no hop to
//! another thread. Under a current-thread runtime, whose one thread also drives the
//! connection, decoding stays on the blocking pool.

use tokio::runtime::{Handle, RuntimeFlavor};

use super::request::join_error;
use crate::lister_watcher::ListWatchError;

/// Runs `decode` (CPU-bound, a few milliseconds at most) on a worker thread and waits for its
/// result; a panic in it is an error.
pub(super) async fn decode_on_worker<R, F>(decode: F) -> Result<R, ListWatchError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let joined = match Handle::current().runtime_flavor() {
        RuntimeFlavor::CurrentThread => tokio::task::spawn_blocking(decode).await,
        _ => tokio::spawn(async move { decode() }).await,
    };
    joined.map_err(join_error)
}
