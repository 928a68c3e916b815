//! The controllers' progress: the storage revision of the last pass that had nothing to do,
//! which `ApiServer::wait_controllers_idle` waits on.

use tokio::sync::watch;

/// The storage revision of the controllers' last pass that had nothing to do.
#[derive(Debug)]
pub(crate) struct Progress {
    idle: watch::Sender<u64>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            idle: watch::channel(0).0,
        }
    }
}

impl Progress {
    /// Records that a pass at `revision` had nothing left to do.
    pub(crate) fn mark_idle(&self, revision: u64) {
        self.idle.send_replace(revision);
    }

    /// Waits until a pass at `revision` or later had nothing left to do; `false` when the
    /// controllers have stopped.
    pub(crate) async fn wait_idle(&self, revision: u64) -> bool {
        let mut rx = self.idle.subscribe();
        rx.wait_for(|idle| *idle >= revision).await.is_ok()
    }
}
