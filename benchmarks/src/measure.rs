//! What a process measures about itself: CPU time in user and system mode (getrusage), resident memory and its peak
//! (`VmRSS`, `VmHWM` of /proc/self/status), and wall-clock instants shared between processes.

use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::resource::{UsageWho, getrusage};

/// CPU seconds a process has used, in user and in system (kernel) mode.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu {
    pub(crate) user: f64,
    pub(crate) sys: f64,
}

impl Cpu {
    /// What this process has used so far (zero if getrusage fails).
    pub(crate) fn now() -> Self {
        getrusage(UsageWho::RUSAGE_SELF).map_or(Self::default(), |u| {
            let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            Self {
                user: secs(u.user_time()),
                sys: secs(u.system_time()),
            }
        })
    }

    /// What was used since `earlier`.
    pub(crate) fn since(self, earlier: Self) -> Self {
        Self {
            user: self.user - earlier.user,
            sys: self.sys - earlier.sys,
        }
    }
}

/// Resident memory now and its high-water mark, in MiB.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Memory {
    pub(crate) rss: f64,
    pub(crate) peak: f64,
}

/// This process's `VmRSS` and `VmHWM` (zero where /proc cannot be read).
pub(crate) fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mib = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    Memory {
        rss: mib("VmRSS:"),
        peak: mib("VmHWM:"),
    }
}

/// Resets the high-water mark to the current resident size (`/proc/self/clear_refs`, value 5).
pub(crate) fn reset_peak() {
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        tracing::warn!(error = %e, "cannot reset the peak: a relist peak is the process's lifetime peak");
    }
}

/// Nanoseconds since the Unix epoch on the wall clock, which every process of the machine shares
/// (CLOCK_REALTIME): a write stamped by the server is compared with the instant a client sees it.
pub(crate) fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
