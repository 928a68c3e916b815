//! Property tests: random operation sequences checked against plain reference models.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::DeltaType::{self, Added, Deleted, Sync, Updated};
use kcache_deltafifo::{DeltaFifo, DeltaFifoOptions, ProcessError, Queue};
use kcache_store::{Indexer, KnownObjects, Store};
use proptest::prelude::*;

use crate::common::{Summary, key, pod, summary};

#[derive(Debug, Clone)]
enum FifoOp {
    Add(usize),
    Update(usize),
    Delete(usize),
    Replace(Vec<usize>),
    Resync,
    Pop,
}

fn fifo_op() -> impl Strategy<Value = FifoOp> {
    let k = 0..5usize;
    prop_oneof![
        3 => k.clone().prop_map(FifoOp::Add),
        3 => k.clone().prop_map(FifoOp::Update),
        2 => k.clone().prop_map(FifoOp::Delete),
        1 => proptest::collection::vec(k, 0..4).prop_map(FifoOp::Replace),
        1 => Just(FifoOp::Resync),
        4 => Just(FifoOp::Pop),
    ]
}

/// The reference model of a DeltaFIFO: a list of keys and a list of (type, tombstone, rv) per key.
#[derive(Default)]
struct Model {
    queue: Vec<String>,
    items: HashMap<String, Vec<Summary>>,
    populated: bool,
    initial: usize,
}

impl Model {
    fn push(&mut self, key: &str, delta: Summary) {
        let deltas = self.items.entry(key.to_owned()).or_default();
        if deltas.is_empty() {
            self.queue.push(key.to_owned());
        }
        deltas.push(delta);
        let n = deltas.len();
        if n >= 2 && deltas[n - 1].0 == Deleted && deltas[n - 2].0 == Deleted {
            if deltas[n - 2].1 {
                deltas.remove(n - 2);
            } else {
                deltas.pop();
            }
        }
    }

    fn has_synced(&self) -> bool {
        self.populated && self.initial == 0
    }
}

fn rv_of(p: &Pod) -> u64 {
    crate::common::rv(p)
}

/// What an informer does with popped deltas: apply them to the indexer.
fn apply(indexer: &Indexer<Pod>, key: &str, deltas: &[Summary], newest: &Arc<Pod>) {
    match deltas.last().map(|d| d.0) {
        Some(Deleted) => {
            indexer.delete_by_key(key);
        }
        Some(_) => indexer.update(newest.clone()).unwrap(),
        None => {}
    }
}

fn run_fifo(ops: Vec<FifoOp>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let indexer = Arc::new(Indexer::<Pod>::default());
    let known: Arc<dyn KnownObjects<Pod>> = indexer.clone();
    let fifo = DeltaFifo::new(DeltaFifoOptions::default().known_objects(known));
    let mut model = Model::default();
    let mut next_rv = 0u64;
    let mut rv = || {
        next_rv += 1;
        next_rv
    };
    for op in ops {
        match op {
            FifoOp::Add(i) | FifoOp::Update(i) => {
                let (kind, v) = (
                    if matches!(op, FifoOp::Add(_)) {
                        Added
                    } else {
                        Updated
                    },
                    rv(),
                );
                if kind == Added {
                    fifo.add(pod(i, v))
                } else {
                    fifo.update(pod(i, v))
                }
                .unwrap();
                model.populated = true;
                model.push(&key(i), (kind, false, v));
            }
            FifoOp::Delete(i) => {
                let v = rv();
                fifo.delete(pod(i, v)).unwrap();
                model.populated = true;
                let k = key(i);
                let queued = model.items.get(&k).is_some_and(|d| !d.is_empty());
                if queued || KnownObjects::get_by_key(&*indexer, &k).is_some() {
                    model.push(&k, (Deleted, false, v));
                }
            }
            FifoOp::Replace(list) => {
                let objs: Vec<Arc<Pod>> = list.iter().map(|&i| pod(i, rv())).collect();
                fifo.replace(objs.clone(), "0").unwrap();
                let listed: HashSet<String> = list.iter().map(|&i| key(i)).collect();
                for o in &objs {
                    model.push(
                        &kcache_store::meta_namespace_key(&**o).unwrap(),
                        (Sync, false, rv_of(o)),
                    );
                }
                let mut deletions = 0;
                for k in model.queue.clone() {
                    if listed.contains(&k) {
                        continue;
                    }
                    let newest = model.items[&k].last().unwrap().2;
                    model.push(&k, (Deleted, true, newest));
                    deletions += 1;
                }
                for k in KnownObjects::list_keys(&*indexer) {
                    if listed.contains(&*k) || model.items.get(&*k).is_some_and(|d| !d.is_empty()) {
                        continue;
                    }
                    let obj = KnownObjects::get_by_key(&*indexer, &k).unwrap();
                    model.push(&k, (Deleted, true, rv_of(&obj)));
                    deletions += 1;
                }
                if !model.populated {
                    model.populated = true;
                    model.initial = listed.len() + deletions;
                }
            }
            FifoOp::Resync => {
                fifo.resync().unwrap();
                for k in KnownObjects::list_keys(&*indexer) {
                    if model.items.get(&*k).is_some_and(|d| !d.is_empty()) {
                        continue;
                    }
                    let obj = KnownObjects::get_by_key(&*indexer, &k).unwrap();
                    model.push(&k, (Sync, false, rv_of(&obj)));
                }
            }
            FifoOp::Pop => {
                if model.queue.is_empty() {
                    prop_assert!(fifo.is_empty());
                    continue;
                }
                let k = model.queue.remove(0);
                let expected = model.items.remove(&k).unwrap();
                let expected_initial = !model.has_synced();
                model.initial = model.initial.saturating_sub(1);
                let (got_key, got, initial) = rt
                    .block_on(fifo.pop(|d, initial| {
                        let key = fifo.key_of_deltas(d).unwrap();
                        let s = summary(d);
                        apply(&indexer, &key, &s, d.newest_object().unwrap());
                        Ok::<_, ProcessError<Infallible>>((key, s, initial))
                    }))
                    .unwrap();
                prop_assert_eq!(&got_key, &k);
                prop_assert_eq!(got, expected);
                prop_assert_eq!(initial, expected_initial);
            }
        }
        prop_assert_eq!(fifo.len(), model.queue.len());
        prop_assert_eq!(fifo.has_synced(), model.has_synced());
        let keys: Vec<String> = Store::list_keys(&fifo)
            .iter()
            .map(|k| k.to_string())
            .collect();
        prop_assert_eq!(&keys, &model.queue);
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum RealOp {
    Write(DeltaType, usize),
    Replace(Vec<usize>),
    Pop,
    PopBatch,
}

fn real_op() -> impl Strategy<Value = RealOp> {
    let k = 0..5usize;
    prop_oneof![
        2 => k.clone().prop_map(|i| RealOp::Write(Added, i)),
        2 => k.clone().prop_map(|i| RealOp::Write(Updated, i)),
        1 => k.clone().prop_map(|i| RealOp::Write(Deleted, i)),
        1 => proptest::collection::vec(k, 0..4).prop_map(RealOp::Replace),
        2 => Just(RealOp::Pop),
        2 => Just(RealOp::PopBatch),
    ]
}

/// Checks a RealFIFO against an append-only log: pops hand out the log in order, batches hold
/// distinct keys, at most the batch size, and never mix the initial list with later deltas.
fn run_real(ops: Vec<RealOp>) -> Result<(), TestCaseError> {
    const BATCH: usize = 3;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let indexer = Arc::new(Indexer::<Pod>::default());
    let known: Arc<dyn KnownObjects<Pod>> = indexer.clone();
    let fifo = kcache_deltafifo::RealFifo::new(
        kcache_deltafifo::RealFifoOptions::default()
            .known_objects(known)
            .batch_size(BATCH),
    );
    let mut log: std::collections::VecDeque<(String, Summary)> = Default::default();
    let mut populated = false;
    let mut initial = 0usize;
    let mut next_rv = 0u64;
    for op in ops {
        match op {
            RealOp::Write(kind, i) => {
                next_rv += 1;
                let p = pod(i, next_rv);
                match kind {
                    Added => fifo.add(p),
                    Updated => fifo.update(p),
                    _ => fifo.delete(p),
                }
                .unwrap();
                populated = true;
                log.push_back((key(i), (kind, false, next_rv)));
            }
            RealOp::Replace(list) => {
                let objs: Vec<Arc<Pod>> = list
                    .iter()
                    .map(|&i| {
                        next_rv += 1;
                        pod(i, next_rv)
                    })
                    .collect();
                fifo.replace(objs.clone(), "0").unwrap();
                let listed: HashSet<String> = list.iter().map(|&i| key(i)).collect();
                let mut last: HashMap<String, Summary> = HashMap::new();
                let mut order = Vec::new();
                for (k, d) in &log {
                    if last.insert(k.clone(), *d).is_none() {
                        order.push(k.clone());
                    }
                }
                let mut appended = Vec::new();
                for k in order {
                    let d = last[&k];
                    if !listed.contains(&k) && d.0 != Deleted {
                        appended.push((k, (Deleted, true, d.2)));
                    }
                }
                for k in KnownObjects::list_keys(&*indexer) {
                    if !listed.contains(&*k) && !last.contains_key(&*k) {
                        let obj = KnownObjects::get_by_key(&*indexer, &k).unwrap();
                        appended.push((k.to_string(), (Deleted, true, rv_of(&obj))));
                    }
                }
                for o in &objs {
                    let k = kcache_store::meta_namespace_key(&**o).unwrap();
                    appended.push((k, (DeltaType::Replaced, false, rv_of(o))));
                }
                log.extend(appended);
                if !populated {
                    populated = true;
                    initial = log.len();
                }
            }
            RealOp::Pop | RealOp::PopBatch => {
                if log.is_empty() {
                    prop_assert!(fifo.is_empty());
                    continue;
                }
                let expected_initial = !(populated && initial == 0);
                let record = |deltas: &[kcache_deltafifo::Delta<Pod>], in_initial: bool| {
                    let mut got = Vec::new();
                    for d in deltas {
                        let o = d.object().unwrap();
                        let k = fifo.key_of(o).unwrap();
                        // What an informer does: apply the delta to the indexer.
                        if d.kind() == Deleted {
                            indexer.delete_by_key(&k);
                        } else {
                            indexer.update(o.object().clone()).unwrap();
                        }
                        got.push((k, (d.kind(), o.is_tombstone(), rv_of(o.object()))));
                    }
                    Ok::<_, ProcessError<Infallible>>((got, in_initial))
                };
                let (got, in_initial) = if matches!(op, RealOp::PopBatch) {
                    rt.block_on(fifo.pop_batch(record)).unwrap()
                } else {
                    let got = rt.block_on(fifo.pop(|d, i| record(d, i))).unwrap();
                    prop_assert_eq!(got.0.len(), 1);
                    got
                };
                prop_assert_eq!(in_initial, expected_initial);
                prop_assert!(!got.is_empty() && got.len() <= BATCH);
                let keys: HashSet<&String> = got.iter().map(|(k, _)| k).collect();
                prop_assert_eq!(keys.len(), got.len());
                if initial > 0 {
                    prop_assert!(got.len() <= initial);
                }
                for g in got.iter() {
                    let expected = log.pop_front();
                    prop_assert_eq!(Some(g), expected.as_ref());
                }
                initial = initial.saturating_sub(got.len());
            }
        }
        prop_assert_eq!(fifo.len(), log.len());
        prop_assert_eq!(fifo.has_synced(), populated && initial == 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn real_fifo_hands_out_the_event_log_in_order_in_valid_batches(
        ops in proptest::collection::vec(real_op(), 0..40)
    ) {
        run_real(ops)?;
    }

    #[test]
    fn delta_fifo_matches_the_reference_model(ops in proptest::collection::vec(fifo_op(), 0..40)) {
        run_fifo(ops)?;
    }
}
