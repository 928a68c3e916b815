//! The handler side of a client under test: counts the MODIFIED events of a phase and their
//! latency from the server's write, which the server stamps into an annotation.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::measure::{Cpu, unix_nanos};

/// The annotation carrying the instant (Unix nanoseconds) of the write that made an object.
pub(crate) const WRITTEN_AT: &str = "bench.kcache.io/written-at";

/// What a handler calls with every object it is given; armed for one phase at a time.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    /// Events the armed phase waits for (0: not armed).
    expect: AtomicU64,
    seen: AtomicU64,
    record_latency: AtomicBool,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    latencies_ns: Mutex<Vec<u64>>,
    /// The process's CPU time when the first and the last event of the phase arrived.
    cpu_at: Mutex<(Cpu, Cpu)>,
    done: Notify,
    list_started_ns: AtomicU64,
}

/// The arrival of a phase's events.
#[derive(Debug)]
pub(crate) struct Arrivals {
    /// When the first and the last event reached the handler (Unix nanoseconds).
    pub(crate) first_ns: u64,
    pub(crate) last_ns: u64,
    /// Write → handler latency of every event, when recorded, in nanoseconds.
    pub(crate) latencies_ns: Vec<u64>,
    /// The process's CPU time from the first event's arrival to the last's.
    pub(crate) cpu: Cpu,
}

impl Probe {
    /// Arms the probe for the next `events` stamped objects.
    pub(crate) fn arm(&self, events: u64, record_latency: bool) {
        self.seen.store(0, Ordering::SeqCst);
        self.record_latency.store(record_latency, Ordering::SeqCst);
        *self.latencies_ns.lock() =
            Vec::with_capacity(if record_latency { events as usize } else { 0 });
        self.expect.store(events, Ordering::SeqCst);
    }

    /// Sees one object by its metadata (an update the handler was given, or an applied object).
    pub(crate) fn observe(&self, meta: &ObjectMeta) {
        if let Some(written) = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(WRITTEN_AT))
            .and_then(|v| v.parse::<u64>().ok())
        {
            self.observe_stamp(written);
        }
    }

    /// Sees one event by the write instant it carries (Unix nanoseconds).
    pub(crate) fn observe_stamp(&self, written: u64) {
        let expect = self.expect.load(Ordering::Acquire);
        if expect == 0 {
            return;
        }
        let now = unix_nanos();
        let n = self.seen.fetch_add(1, Ordering::AcqRel) + 1;
        if n == 1 {
            self.first_ns.store(now, Ordering::Release);
            self.cpu_at.lock().0 = Cpu::now();
        }
        if self.record_latency.load(Ordering::Relaxed) {
            self.latencies_ns.lock().push(now.saturating_sub(written));
        }
        if n == expect {
            self.cpu_at.lock().1 = Cpu::now();
            self.last_ns.store(now, Ordering::Release);
            self.expect.store(0, Ordering::Release);
            self.done.notify_one();
        }
    }

    /// Notes that the client has started a list (its latest start is what a relist is timed from).
    pub(crate) fn list_started(&self) {
        self.list_started_ns.store(unix_nanos(), Ordering::Release);
    }

    /// When the client last started a list (Unix nanoseconds; 0: never seen).
    pub(crate) fn list_started_ns(&self) -> u64 {
        self.list_started_ns.load(Ordering::Acquire)
    }

    /// Waits until the armed phase has seen all its events.
    pub(crate) async fn wait(&self) -> Arrivals {
        self.done.notified().await;
        let (first, last) = *self.cpu_at.lock();
        Arrivals {
            cpu: last.since(first),
            first_ns: self.first_ns.load(Ordering::Acquire),
            last_ns: self.last_ns.load(Ordering::Acquire),
            latencies_ns: std::mem::take(&mut *self.latencies_ns.lock()),
        }
    }
}

/// The write instant stamped in a raw watch line, read without decoding the line.
pub(crate) fn stamp_in_line(line: &str) -> Option<u64> {
    let (_, after) = line.split_once(WRITTEN_AT)?;
    let digits = after.strip_prefix("\":\"")?.split('"').next()?;
    digits.parse().ok()
}

/// The `q` quantile (0..=1) of `values`, sorted in place; 0 when empty.
pub(crate) fn quantile(values: &mut [u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let at = ((values.len() - 1) as f64 * q).round() as usize;
    values[at.min(values.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_stamp_is_read_out_of_a_raw_watch_line() {
        let line = format!(
            r#"{{"type":"MODIFIED","object":{{"metadata":{{"annotations":{{"a":"1","{WRITTEN_AT}":"1732400000123456789"}}}}}}}}"#
        );
        assert_eq!(stamp_in_line(&line), Some(1_732_400_000_123_456_789));
        assert_eq!(stamp_in_line(r#"{"type":"BOOKMARK","object":{}}"#), None);
    }
}
