//! [`WorkQueue::run_workers`]: the worker loop every controller writes, written once.

use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinSet;

use crate::WorkQueue;

impl<T: Eq + Hash + Clone + Send + Sync + 'static> WorkQueue<T> {
    /// Runs `workers` tasks (at least one) that take items from the queue and call
    /// `reconcile(item)` until the queue is shut down and empty; returns when every worker has
    /// finished.
    ///
    /// - `Ok(())`: the item's rate-limiter history is forgotten, unless `reconcile` called
    ///   [`requeue_stale`](WorkQueue::requeue_stale) for it: its backoff then goes on.
    /// - `Err(e)`: `e` is logged (`tracing` warn) and the item is retried after the delay the
    ///   queue's [`RateLimiter`](crate::RateLimiter) gives.
    /// - A panic: caught, logged (`tracing` error) and retried like an error; the worker goes on.
    ///
    /// In every case the item is marked done, so a key is never wedged. The tasks are spawned on
    /// the current tokio runtime when the returned future is first polled; the future owns a
    /// handle to the queue, so it can be spawned, and dropping it aborts the workers. For a clean shutdown
    /// call [`shut_down_with_drain`](WorkQueue::shut_down_with_drain) (or
    /// [`shut_down`](WorkQueue::shut_down)) and await this future: items being reconciled finish,
    /// queued items are still handed out, retries are dropped.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use kcache_workqueue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let queue = WorkQueue::<u32>::new();
    /// let attempts = Arc::new(AtomicUsize::new(0));
    /// queue.add(7);
    /// let workers = tokio::spawn(queue.run_workers(4, {
    ///     let (queue, attempts) = (queue.clone(), attempts.clone());
    ///     move |item: u32| {
    ///         let (queue, attempts) = (queue.clone(), attempts.clone());
    ///         async move {
    ///             // Fails once, then succeeds and stops the queue.
    ///             if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
    ///                 return Err(format!("{item}: not yet"));
    ///             }
    ///             queue.shut_down();
    ///             Ok(())
    ///         }
    ///     }
    /// }));
    /// workers.await.unwrap();
    /// assert_eq!(attempts.load(Ordering::SeqCst), 2);
    /// # }
    /// ```
    pub fn run_workers<F, Fut, E>(
        &self,
        workers: usize,
        reconcile: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        let queue = self.clone();
        let reconcile = Arc::new(reconcile);
        async move { queue.work(workers, reconcile).await }
    }

    async fn work<F, Fut, E>(&self, workers: usize, reconcile: Arc<F>)
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        let mut tasks = JoinSet::new();
        for _ in 0..workers.max(1) {
            let (queue, reconcile) = (self.clone(), Arc::clone(&reconcile));
            tasks.spawn(async move {
                while let Some(item) = queue.next().await {
                    let outcome = AssertUnwindSafe(reconcile(item.item().clone()))
                        .catch_unwind()
                        .await;
                    match outcome {
                        // Requeued as stale: not a success, its backoff goes on.
                        Ok(Ok(())) if queue.take_stale(item.item()) => {}
                        Ok(Ok(())) => item.forget(),
                        Ok(Err(e)) => {
                            tracing::warn!(queue = queue.name(), error = %e, "reconcile failed; retrying");
                            item.retry_rate_limited();
                        }
                        Err(_) => {
                            tracing::error!(queue = queue.name(), "reconcile panicked; retrying");
                            item.retry_rate_limited();
                        }
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// [`run_workers`](WorkQueue::run_workers) until `shutdown` completes, then a clean
    /// shutdown: the queue is shut down with [drain](WorkQueue::shut_down_with_drain) (items
    /// being reconciled finish, queued items are still handed out, retries are dropped) and the
    /// returned future ends once every worker has finished. It also ends if the queue is shut
    /// down by someone else.
    ///
    /// ```
    /// use kcache_workqueue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let queue = WorkQueue::<String>::new();
    /// queue.add("default/web".to_string());
    /// let stop = std::future::ready(()); // a Ctrl-C future in a real program
    /// queue
    ///     .run_workers_until(stop, 4, |key: String| async move {
    ///         println!("reconciling {key}");
    ///         Ok::<(), std::convert::Infallible>(())
    ///     })
    ///     .await;
    /// assert!(queue.is_shutting_down());
    /// # }
    /// ```
    pub fn run_workers_until<S, F, Fut, E>(
        &self,
        shutdown: S,
        workers: usize,
        reconcile: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        S: Future<Output = ()> + Send + 'static,
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        let queue = self.clone();
        let running = self.run_workers(workers, reconcile);
        async move {
            tokio::pin!(running);
            tokio::select! {
                () = &mut running => return,
                () = shutdown => {}
            }
            tokio::join!(running, queue.shut_down_with_drain());
        }
    }
}
