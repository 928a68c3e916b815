//! List pages: read as they arrive, decoded in batches on blocking threads, the next page
//! prefetched.

use std::sync::Arc;

use futures::{StreamExt, stream};
use http_body_util::BodyExt;
use kube_client::Client;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::request::{join_error, map_error, request_url, send};
use super::{JSON, KubeListerWatcher, METADATA_LIST};
use crate::decode::{ListMeta, decode_items};
use crate::list_scan::{ItemBatch, ListScanner};
use crate::lister_watcher::{ListOptions, ListPage, ListWatchError};

/// Item batches (of 256 KiB) of a list body read ahead of the decoders: the rest waits in the
/// connection, so a relist never holds the whole raw body next to the decoded objects.
const LIST_READ_AHEAD_BATCHES: usize = 8;

/// A part of a list body, in order: batches of items, then the list's metadata.
enum ListPart {
    Items(ItemBatch),
    End(ListMeta),
}

/// A decoded [`ListPart`].
enum PagePart<K> {
    Items(Vec<Arc<K>>),
    End(ListMeta),
}

type Parts = mpsc::Receiver<Result<ListPart, ListWatchError>>;

/// A list request under way: the parts of its body arrive on `parts` as they are read.
pub(super) struct PageRead {
    options: ListOptions,
    parts: Parts,
    /// Told when the page is taken by a `list` call (only then may it prefetch its successor).
    taken: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// Reads list pages: each body is split into item batches while it arrives, and the next page is
/// requested as soon as a body has been read (client-go's pager also prefetches).
#[derive(Clone)]
struct Pager {
    client: Client,
    url_path: String,
    accept: &'static str,
    prefetch: bool,
    next_page: Arc<Mutex<Option<PageRead>>>,
}

impl Pager {
    fn start(&self, options: ListOptions) -> PageRead {
        let (parts_tx, parts) = mpsc::channel(LIST_READ_AHEAD_BATCHES);
        let (taken, taken_rx) = oneshot::channel();
        let task = tokio::spawn(self.clone().read(options.clone(), parts_tx, taken_rx));
        PageRead {
            options,
            parts,
            taken,
            task,
        }
    }

    /// The parts of the page for `options`: those of the prefetched page if it is this one.
    fn take(&self, options: &ListOptions) -> Parts {
        let read = match self.next_page.lock().take() {
            Some(read) if read.options == *options => read,
            Some(stale) => {
                stale.task.abort();
                self.start(options.clone())
            }
            None => self.start(options.clone()),
        };
        // Nobody waits for a page that failed early.
        let _ = read.taken.send(());
        read.parts
    }

    async fn read(
        self,
        options: ListOptions,
        parts: mpsc::Sender<Result<ListPart, ListWatchError>>,
        taken: oneshot::Receiver<()>,
    ) {
        if let Err(e) = self.read_parts(&options, &parts, taken).await {
            // The receiver may be gone (the list was abandoned): nothing to tell then.
            let _ = parts.send(Err(e)).await;
        }
    }

    async fn read_parts(
        &self,
        options: &ListOptions,
        parts: &mpsc::Sender<Result<ListPart, ListWatchError>>,
        taken: oneshot::Receiver<()>,
    ) -> Result<(), ListWatchError> {
        let started = std::time::Instant::now();
        let url = request_url(&self.url_path, options, false);
        let mut body = send(&self.client, url, self.accept, false)
            .await?
            .into_data_stream();
        let mut scanner = ListScanner::default();
        let mut batches = Vec::new();
        let mut bytes = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(map_error)?;
            bytes += chunk.len();
            scanner.feed(&chunk, &mut batches)?;
            for batch in batches.drain(..) {
                if parts.send(Ok(ListPart::Items(batch))).await.is_err() {
                    return Ok(());
                }
            }
        }
        let meta = scanner.finish()?;
        tracing::debug!(bytes, elapsed = ?started.elapsed(), "list body received");
        if self.prefetch
            && let Some(token) = meta.continue_token.as_deref().filter(|t| !t.is_empty())
            // A prefetched page fetches its own successor only once it is taken.
            && taken.await.is_ok()
        {
            let next = ListOptions {
                continue_token: Some(token.to_owned()),
                resource_version: None,
                resource_version_match: None,
                ..options.clone()
            };
            let read = self.start(next);
            if let Some(stale) = self.next_page.lock().replace(read) {
                stale.task.abort();
            }
        }
        let _ = parts.send(Ok(ListPart::End(meta))).await;
        Ok(())
    }
}

impl<K> KubeListerWatcher<K>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    fn pager(&self) -> Pager {
        Pager {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            accept: if self.metadata_only {
                METADATA_LIST
            } else {
                JSON
            },
            prefetch: self.prefetch,
            next_page: Arc::clone(&self.next_page),
        }
    }

    /// One page: item batches are decoded on blocking threads while the body is still being
    /// read, `parallelism` of them at a time, and collected in order.
    pub(super) async fn list_page(
        &self,
        options: ListOptions,
    ) -> Result<ListPage<K>, ListWatchError> {
        let options = self.tweaked(&options);
        let mut parts = self.pager().take(&options);
        let known = self.known.clone();
        let transform = self.transform.clone();
        let mut decoded = stream::poll_fn(move |cx| parts.poll_recv(cx))
            .map(|part| {
                let (known, transform) = (known.clone(), transform.clone());
                async move {
                    match part? {
                        ListPart::Items(batch) => tokio::task::spawn_blocking(move || {
                            decode_items::<K>(
                                &batch.body,
                                &batch.items,
                                known.as_ref(),
                                transform.as_ref(),
                            )
                        })
                        .await
                        .map_err(join_error)?
                        .map(PagePart::Items),
                        ListPart::End(meta) => Ok(PagePart::End(meta)),
                    }
                }
            })
            .buffered(self.parallelism);
        let mut items = Vec::new();
        while let Some(part) = decoded.next().await {
            match part? {
                PagePart::Items(mut batch) => items.append(&mut batch),
                PagePart::End(meta) => {
                    return Ok(ListPage {
                        items,
                        resource_version: meta.resource_version.unwrap_or_default(),
                        continue_token: meta.continue_token.filter(|c| !c.is_empty()),
                        remaining_item_count: meta.remaining_item_count,
                    });
                }
            }
        }
        Err(ListWatchError::Other(
            "the list reader stopped before the end of the body".into(),
        ))
    }
}
