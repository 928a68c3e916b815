//! The cache of recorded Events that turns repeats into a series (client-go's
//! `eventBroadcasterImpl.eventCache`, `getKey`, `finishSeries`).

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// How long a series (or a single Event) stays open to repeats after it was last observed
/// (client-go's `finishTime`).
pub(crate) const FINISH_TIME: Duration = Duration::from_secs(6 * 60);

/// What makes two Events repeats of each other: client-go's `eventKey` (action, reason,
/// reporting controller, regarding, related, note), the references as their JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    action: Option<String>,
    reason: Option<String>,
    reporting_controller: Option<String>,
    regarding: String,
    related: String,
    note: Option<String>,
}

impl Key {
    fn of(event: &Event) -> Self {
        let json = |r| serde_json::to_string(&r).unwrap_or_default();
        Self {
            action: event.action.clone(),
            reason: event.reason.clone(),
            reporting_controller: event.reporting_controller.clone(),
            regarding: json(event.regarding.as_ref()),
            related: json(event.related.as_ref()),
            note: event.note.clone(),
        }
    }
}

/// The Events recorded recently, by [`Key`].
#[derive(Debug, Default)]
pub(crate) struct Series {
    cache: HashMap<Key, Event>,
}

impl Series {
    /// Observes `event` at `now`: the Event to write, if any. A first occurrence is written as
    /// is; the second turns the cached Event into a series of count 2, written (as a patch of
    /// its `series`); later ones only count up in the cache (no request: this is what keeps a
    /// hot loop from flooding the API server) until [`Series::running`] is written again.
    pub(crate) fn observe(&mut self, event: Event, now: Timestamp) -> Option<Event> {
        let key = Key::of(&event);
        let Some(cached) = self.cache.get_mut(&key) else {
            self.cache.insert(key, event.clone());
            return Some(event);
        };
        let last_observed_time = MicroTime(now);
        match &mut cached.series {
            Some(series) => {
                series.count = series.count.saturating_add(1);
                series.last_observed_time = last_observed_time;
                None
            }
            None => {
                cached.series = Some(EventSeries {
                    count: 2,
                    last_observed_time,
                });
                Some(cached.clone())
            }
        }
    }

    /// Replaces the cached Event of `written`'s key with the server's copy (its name and
    /// resource version), keeping the series counted meanwhile.
    pub(crate) fn written(&mut self, mut written: Event) {
        let key = Key::of(&written);
        if let Some(cached) = self.cache.get_mut(&key) {
            written.series.clone_from(&cached.series);
            *cached = written;
        }
    }

    /// The series still counting, to write again (client-go's periodic refresh).
    pub(crate) fn running(&self) -> Vec<Event> {
        self.cache
            .values()
            .filter(|e| e.series.is_some())
            .cloned()
            .collect()
    }

    /// Forgets Events and series not observed for [`FINISH_TIME`] before `now`: a later repeat
    /// starts a new Event.
    pub(crate) fn finish(&mut self, now: Timestamp) {
        let finish = i64::try_from(FINISH_TIME.as_micros()).unwrap_or(i64::MAX);
        self.cache.retain(|_, e| {
            let last = match &e.series {
                Some(series) => Some(&series.last_observed_time),
                None => e.event_time.as_ref(),
            };
            last.is_some_and(|t| t.0.as_microsecond().saturating_add(finish) > now.as_microsecond())
        });
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ObjectReference;

    use super::*;

    fn event(note: &str, at: Timestamp) -> Event {
        Event {
            event_time: Some(MicroTime(at)),
            regarding: Some(ObjectReference {
                name: Some("web-0".into()),
                ..ObjectReference::default()
            }),
            reason: Some("Started".into()),
            action: Some("Start".into()),
            note: Some(note.into()),
            reporting_controller: Some("c".into()),
            ..Event::default()
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_first_event_is_written_as_is() {
        let mut s = Series::default();
        let written = s.observe(event("a", at(0)), at(0)).unwrap();
        assert!(written.series.is_none());
    }

    #[test]
    fn the_second_repeat_starts_a_series_of_two_and_later_ones_only_count() {
        let mut s = Series::default();
        s.observe(event("a", at(0)), at(0));
        let second = s.observe(event("a", at(1)), at(1)).unwrap();
        let series = second.series.unwrap();
        assert_eq!(series.count, 2);
        assert_eq!(series.last_observed_time, MicroTime(at(1)));
        assert!(s.observe(event("a", at(2)), at(2)).is_none());
        let running = s.running();
        assert_eq!(running.len(), 1);
        let series = running[0].series.clone().unwrap();
        assert_eq!(
            (series.count, series.last_observed_time),
            (3, MicroTime(at(2)))
        );
    }

    #[test]
    fn a_different_note_is_a_different_event() {
        let mut s = Series::default();
        s.observe(event("a", at(0)), at(0));
        assert!(
            s.observe(event("b", at(0)), at(0))
                .unwrap()
                .series
                .is_none()
        );
    }

    #[test]
    fn a_series_finishes_six_minutes_after_its_last_observation() {
        let mut s = Series::default();
        s.observe(event("a", at(0)), at(0));
        s.observe(event("a", at(100)), at(100));
        s.finish(at(100 + 359));
        assert_eq!(s.running().len(), 1);
        s.finish(at(100 + 360));
        assert!(s.running().is_empty());
        let again = s.observe(event("a", at(500)), at(500)).unwrap();
        assert!(again.series.is_none());
    }
}
