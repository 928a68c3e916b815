//! The controllers' progress, which `ApiServer::wait_controllers_idle` waits on: the revision
//! and served set waiters want covered, and the last point at which the controllers had
//! applied every change up to a revision and had nothing left to do.

use tokio::sync::watch;

/// A point of the controllers' progress: a storage revision and a version of the served set
/// (`Shared::served_changes`). A CRD served adds objects without moving the revision.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Idle {
    /// The storage revision.
    pub(crate) revision: u64,
    /// The version of the served set.
    pub(crate) served: u64,
}

impl Idle {
    /// Whether this point is at or past `other` in both.
    pub(crate) fn covers(self, other: Self) -> bool {
        self.revision >= other.revision && self.served >= other.served
    }
}

/// What waiters want and where the controllers were last idle.
#[derive(Debug)]
pub(crate) struct Progress {
    idle: watch::Sender<Idle>,
    wanted: watch::Sender<Idle>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            idle: watch::channel(Idle::default()).0,
            wanted: watch::channel(Idle::default()).0,
        }
    }
}

impl Progress {
    /// Records that every change up to `idle` has been applied and nothing is left to do.
    pub(crate) fn mark_idle(&self, idle: Idle) {
        self.idle.send_replace(idle);
    }

    /// The last point marked idle.
    pub(crate) fn idle(&self) -> Idle {
        *self.idle.borrow()
    }

    /// Follows what waiters want covered (the controllers check it only then).
    pub(crate) fn wanted(&self) -> watch::Receiver<Idle> {
        self.wanted.subscribe()
    }

    /// Waits until the controllers were idle at `at` or later; `false` when they have stopped.
    pub(crate) async fn wait_idle(&self, at: Idle) -> bool {
        self.wanted.send_if_modified(|wanted| {
            let next = Idle {
                revision: wanted.revision.max(at.revision),
                served: wanted.served.max(at.served),
            };
            let changed = next != *wanted;
            *wanted = next;
            changed
        });
        let mut rx = self.idle.subscribe();
        rx.wait_for(|idle| idle.covers(at)).await.is_ok()
    }
}
