//! The controllers' progress: the storage revision and the served set of the last pass that
//! had nothing to do, which `ApiServer::wait_controllers_idle` waits on.

use tokio::sync::watch;

/// Where the controllers' last pass that had nothing to do stood: the storage revision it read
/// and the version of the served set (`Shared::served_changes`) whose caches it read. A CRD
/// served since then adds objects the pass did not see without moving the revision.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Idle {
    /// The storage revision of the pass.
    pub(crate) revision: u64,
    /// The version of the served set of the pass.
    pub(crate) served: u64,
}

/// The last idle pass of the controllers.
#[derive(Debug)]
pub(crate) struct Progress {
    idle: watch::Sender<Idle>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            idle: watch::channel(Idle::default()).0,
        }
    }
}

impl Progress {
    /// Records that a pass at `idle` had nothing left to do.
    pub(crate) fn mark_idle(&self, idle: Idle) {
        self.idle.send_replace(idle);
    }

    /// Waits until a pass at `at`'s revision or later, over its served set or a later one,
    /// had nothing left to do; `false` when the controllers have stopped.
    pub(crate) async fn wait_idle(&self, at: Idle) -> bool {
        let mut rx = self.idle.subscribe();
        rx.wait_for(|idle| idle.revision >= at.revision && idle.served >= at.served)
            .await
            .is_ok()
    }
}
