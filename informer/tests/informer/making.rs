//! What an informer gives the lister-watcher it runs: its transform and its indexer, once, as
//! the lister-watcher is built when the informer starts (`ObjectMaking`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::SharedIndexInformer;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListFuture, ListOptions, ListerWatcher, ObjectMaking, WatchFuture};
use kcache_store::Store;
use parking_lot::Mutex;

use crate::common::{Running, pod, source_with};

/// What a lister-watcher was given: whether a transform, and how many objects were known.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Given {
    transform: bool,
    known: Option<usize>,
}

/// Forwards to the fake source and records what the informer gave it as it was built.
struct Recording {
    source: Arc<FakeControllerSource<Pod>>,
    given: Arc<Mutex<Option<Given>>>,
}

impl ListerWatcher<Pod> for Recording {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, Pod> {
        self.source.list(options)
    }
    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, Pod> {
        self.source.watch(options)
    }
    fn making_objects(self: Box<Self>, making: ObjectMaking<Pod>) -> Box<dyn ListerWatcher<Pod>> {
        let known = making.known().map(|k| k.list_keys().len());
        *self.given.lock() = Some(Given {
            transform: making.transform_func().is_some(),
            known,
        });
        Box::new(Arc::clone(&self.source)).making_objects(making)
    }
}

#[tokio::test(start_paused = true)]
async fn the_informer_gives_its_transform_and_its_indexer_to_the_lister_watcher_it_builds() {
    let source = source_with(2);
    let given = Arc::new(Mutex::new(None));
    let informer = SharedIndexInformer::builder(Recording {
        source: Arc::clone(&source),
        given: Arc::clone(&given),
    })
    .build();
    informer.indexer().add(Arc::new(pod(7))).unwrap();
    informer.set_transform(Arc::new(Ok)).unwrap();
    assert!(
        given.lock().is_none(),
        "nothing is built before the informer starts"
    );
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    assert_eq!(
        *given.lock(),
        Some(Given {
            transform: true,
            known: Some(1)
        }),
        "the transform set before start, and the informer's own indexer as the known objects"
    );
    running.stop().await;
}
