//! Property tests: the work queue against a model under random operation sequences.

use std::collections::HashMap;

use kcache_workqueue::WorkQueue;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum WorkOp {
    Add(u8),
    Get(usize),
    Done(usize),
}

fn work_op() -> impl Strategy<Value = WorkOp> {
    prop_oneof![
        (0..6u8).prop_map(WorkOp::Add),
        (0..3usize).prop_map(WorkOp::Get),
        (0..3usize).prop_map(WorkOp::Done),
    ]
}

fn run_work(ops: Vec<WorkOp>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let q = WorkQueue::<u8>::new();
    let mut held: [Option<u8>; 3] = [None; 3];
    let mut last_add: HashMap<u8, usize> = HashMap::new();
    let mut last_handout: HashMap<u8, usize> = HashMap::new();
    let mut step = 0;
    let mut hand_out =
        |item: u8, held: &[Option<u8>; 3], step: usize| -> Result<(), TestCaseError> {
            prop_assert!(
                !held.contains(&Some(item)),
                "{} handed to two workers",
                item
            );
            last_handout.insert(item, step);
            Ok(())
        };
    for op in ops {
        step += 1;
        match op {
            WorkOp::Add(item) => {
                q.add(item);
                last_add.insert(item, step);
            }
            WorkOp::Get(w) => {
                if held[w].is_none() && !q.is_empty() {
                    let item = rt.block_on(q.get()).unwrap();
                    hand_out(item, &held, step)?;
                    held[w] = Some(item);
                }
            }
            WorkOp::Done(w) => {
                if let Some(item) = held[w].take() {
                    q.done(&item);
                }
            }
        }
    }
    // Finish: the workers complete, the queue shuts down and is drained.
    for h in &mut held {
        if let Some(item) = h.take() {
            q.done(&item);
        }
    }
    q.shut_down();
    while let Some(item) = rt.block_on(q.get()) {
        step += 1;
        hand_out(item, &held, step)?;
        q.done(&item);
    }
    for (item, added) in &last_add {
        let handed = last_handout.get(item).copied().unwrap_or(0);
        prop_assert!(
            handed > *added,
            "{} added at {} but last handed out at {}",
            item,
            added,
            handed
        );
    }
    prop_assert_eq!(q.processing(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn work_queue_never_hands_an_item_to_two_workers_and_loses_nothing(
        ops in proptest::collection::vec(work_op(), 0..80)
    ) {
        run_work(ops)?;
    }
}
