//! [`ApiServer`]: the resources, their caches, storage, faults and the HTTP router.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube_core::ApiResource;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::access::{AccessRule, Policy};
use crate::admission::SYSTEM_NAMESPACES;
use crate::cache::WatchCache;
use crate::deletion::is_namespace;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::{ResourceDef, builtin_resources};
use crate::shared::{Faults, Ipv4Cidr, ServerConfig, Shared};
use crate::storage::{MemoryStorage, Storage};

/// A Kubernetes-compatible list/watch API server: storage with a global revision, one watch
/// cache per resource kept by a reflector, and the HTTP API ([`ApiServer::router`]).
///
/// Cheap to clone (shared state). Build it with [`ApiServer::builder`] inside a tokio runtime;
/// [`ApiServer::shutdown`] stops its background tasks.
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServer")
            .field("storage", &self.shared.storage)
            .field("resources", &self.shared.served().resources.len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`ApiServer`].
#[derive(Debug, Default)]
pub struct ApiServerBuilder {
    config: ServerConfig,
    extra: Vec<ResourceDef>,
    crds: Vec<serde_json::Value>,
    storage: Option<Arc<dyn Storage>>,
    policy: Policy,
    no_garbage_collection: bool,
    webhook_services: Vec<crate::shared::ServiceAddress>,
}

impl ApiServerBuilder {
    /// Uses these settings.
    #[must_use]
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Serves a custom resource (with a status subresource): a shortcut that registers a
    /// CustomResourceDefinition `<plural>.<group>` (created at start unless stored already; its
    /// schema keeps every field), and serves the resource from the start.
    #[must_use]
    pub fn custom_resource(mut self, api: ApiResource, namespaced: bool) -> Self {
        self.crds
            .push(crate::crd::for_api_resource(&api, namespaced));
        self.extra.push(ResourceDef::custom(api, namespaced));
        self
    }

    /// Serves a resource described in full.
    #[must_use]
    pub fn resource(mut self, def: ResourceDef) -> Self {
        self.extra.push(def);
        self
    }

    /// Uses another [`Storage`] instead of a new [`MemoryStorage`].
    #[must_use]
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Sets the bookmark interval (Kubernetes: one minute).
    #[must_use]
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.config.cache.bookmark_interval = interval;
        self
    }

    /// Sets the range services' cluster IPs are allocated from (Kubernetes: 10.96.0.0/12).
    #[must_use]
    pub fn service_cidr(mut self, cidr: Ipv4Cidr) -> Self {
        self.config.service_cidr = cidr;
        self
    }

    /// Sets the range services' node ports are allocated from (Kubernetes: 30000-32767).
    #[must_use]
    pub fn service_node_port_range(mut self, range: crate::PortRange) -> Self {
        self.config.service_node_port_range = range;
        self
    }

    /// Sets the watch cache's event capacity (fixed).
    #[must_use]
    pub fn cache_capacity(mut self, capacity: usize) -> Self {
        self.config.cache.capacity = capacity;
        self.config.cache.max_capacity = None;
        self
    }

    /// Makes the watch cache's event capacity dynamic between `min` and `max` as in Kubernetes
    /// (which uses 100 and 102,400; see [`CacheConfig::max_capacity`](crate::CacheConfig::max_capacity)).
    #[must_use]
    pub fn dynamic_cache_capacity(mut self, min: usize, max: usize) -> Self {
        self.config.cache.capacity = min;
        self.config.cache.max_capacity = Some(max);
        self
    }

    /// Sets how many writes the storage keeps before compacting.
    #[must_use]
    pub fn history(mut self, history: usize) -> Self {
        self.config.history = history;
        self
    }

    /// Requires this bearer token.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.config.token = Some(token.into());
        self
    }

    /// Makes the authorization reviews (`kubectl auth can-i`, `SubjectAccessReview`) answer
    /// from these rules instead of allowing everything. Requests themselves stay unrestricted.
    #[must_use]
    pub fn access_rules(mut self, rules: Vec<AccessRule>) -> Self {
        self.policy = Policy(Some(rules));
        self
    }

    /// Turns the garbage collector on (the default) or off. Off, as a cluster run with
    /// `--enable-garbage-collector=false`: owner references do nothing and deletes add no
    /// `orphan` / `foregroundDeletion` finalizer. For servers seeded with fixtures whose owners
    /// do not exist, which the collector would otherwise delete.
    #[must_use]
    pub fn garbage_collection(mut self, enabled: bool) -> Self {
        self.no_garbage_collection = !enabled;
        self
    }

    /// Where the admission webhooks of `clientConfig.service` `namespace`/`name` listen: the
    /// server connects to `address` for them (Kubernetes resolves the service through its
    /// endpoints), with the TLS server name `<name>.<namespace>.svc` checked against the
    /// webhook's `caBundle`. A service not given here fails the webhook's calls.
    #[must_use]
    pub fn webhook_service(mut self, namespace: &str, name: &str, address: SocketAddr) -> Self {
        self.webhook_services.push(crate::shared::ServiceAddress {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            address,
        });
        self
    }

    /// Starts the caches (needs a tokio runtime) and returns the server.
    pub fn build(self) -> ApiServer {
        let storage = self.storage.unwrap_or_else(|| {
            Arc::new(MemoryStorage::new(self.config.history)) as Arc<dyn Storage>
        });
        let mut resources: Vec<Arc<ResourceDef>> =
            builtin_resources().into_iter().map(Arc::new).collect();
        for def in self.extra {
            resources.retain(|r| !(r.api.group == def.api.group && r.api.plural == def.api.plural));
            resources.push(Arc::new(def));
        }
        let shared = Arc::new(Shared {
            storage,
            served: Mutex::default(),
            config: self.config,
            faults: Faults::default(),
            watch_end: Mutex::new(CancellationToken::new()),
            shutdown: CancellationToken::new(),
            served_changes: tokio::sync::watch::Sender::new(0),
            crds_served: tokio::sync::watch::Sender::new(false),
            openapi: Mutex::new(None),
            tokens: crate::tokens::Issuer::generate()
                .inspect_err(|e| tracing::error!(error = %e, "no service account token issuer"))
                .ok(),
            policy: self.policy,
            garbage_collection: !self.no_garbage_collection,
            webhook_services: self.webhook_services,
            controllers: crate::controllers::progress::Progress::default(),
            bootstrapped: std::sync::atomic::AtomicBool::new(false),
        });
        // The versions of one resource are served together, the stored one first.
        let mut by_resource: Vec<Vec<Arc<ResourceDef>>> = Vec::new();
        for def in resources {
            let same =
                |r: &ResourceDef| r.api.group == def.api.group && r.api.plural == def.api.plural;
            match by_resource
                .iter_mut()
                .find(|defs| defs.first().is_some_and(|r| same(r)))
            {
                Some(defs) => defs.push(def),
                None => by_resource.push(vec![def]),
            }
        }
        for mut defs in by_resource {
            defs.sort_by_key(|d| d.api.version != d.storage_version);
            if let Some((group, plural)) = defs
                .first()
                .map(|d| (d.api.group.clone(), d.api.plural.clone()))
            {
                shared.serve(&group, &plural, defs);
            }
        }
        crate::controllers::spawn(&shared, self.crds);
        ApiServer { shared }
    }
}

impl ApiServer {
    /// A builder with the built-in resources and default settings.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// The axum router serving the API.
    pub fn router(&self) -> axum::Router {
        crate::http::router(Arc::clone(&self.shared))
    }

    /// The storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.shared.storage
    }

    /// The served resources (a snapshot: custom resources come and go with their
    /// CustomResourceDefinitions).
    pub fn resources(&self) -> Vec<Arc<ResourceDef>> {
        self.shared.served().resources.clone()
    }

    /// The resource with this kind (first match), e.g. `"Pod"`.
    pub fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.shared
            .served()
            .resources
            .iter()
            .find(|r| {
                r.api.kind == kind && (api_version.is_empty() || r.api.api_version == api_version)
            })
            .cloned()
    }

    /// The watch cache of a resource.
    pub fn cache(&self, def: &ResourceDef) -> Option<Arc<WatchCache>> {
        self.shared.cache(def)
    }

    /// Creates objects directly in storage (no HTTP, no validation beyond the resource lookup):
    /// server fields (uid, creationTimestamp, generation) are filled in when missing. Returns the
    /// storage revision after the last write.
    pub async fn seed(&self, objects: impl IntoIterator<Item = Object>) -> Result<u64, ApiError> {
        let mut last = 0;
        for obj in objects {
            last = self.create(obj).await?.resource_version_u64();
        }
        Ok(last)
    }

    /// Creates one object directly in storage (as [`ApiServer::seed`]) and returns it as stored;
    /// a CustomResourceDefinition is returned once its resource is served, so that objects of
    /// it can follow.
    pub async fn create(&self, obj: Object) -> Result<Arc<Object>, ApiError> {
        let def = self
            .resource_for_kind(obj.api_version(), obj.kind())
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "no resource for {} {}",
                    obj.api_version(),
                    obj.kind()
                ))
            })?;
        let created = crate::registry::create_object(&self.shared, &def, obj).await?;
        if let Some(crd) = crate::crd::is_crd(&def)
            .then(|| crate::crd::typed(&created))
            .flatten()
            && let Some(storage) = crd.spec.versions.iter().find(|v| v.storage && v.served)
        {
            let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
            self.wait_served(group, &storage.name, plural, true).await;
        }
        Ok(created)
    }

    /// The storage's current revision.
    pub async fn storage_revision(&self) -> Result<u64, ApiError> {
        self.shared
            .storage
            .revision()
            .await
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    /// Waits until every watch cache has reached the storage's current revision.
    pub async fn wait_caches_synced(&self) -> Result<(), ApiError> {
        let rev = self.storage_revision().await?;
        for cache in self.shared.served().caches() {
            cache.wait_fresh(rev).await?;
        }
        Ok(())
    }

    /// Waits until the CustomResourceDefinitions stored when the server started are served.
    pub async fn wait_crds_served(&self) {
        let mut rx = self.shared.crds_served.subscribe();
        // An error means the sender is gone with the server: nothing left to wait for.
        let _ = rx.wait_for(|served| *served).await;
    }

    /// Waits until the resource `plural` of `group`/`version` is served (a custom resource
    /// appears when the CRD controller has handled its CustomResourceDefinition), or with
    /// `served == false` until it is not.
    pub async fn wait_served(&self, group: &str, version: &str, plural: &str, served: bool) {
        let mut rx = self.shared.served_changes.subscribe();
        // An error means the sender is gone with the server: nothing left to wait for.
        let _ = rx
            .wait_for(|_| self.shared.find(group, version, plural).is_some() == served)
            .await;
    }

    /// Waits until objects of `group`/`plural` written through `version` are stored in
    /// `storage_version` (the CRD controller has handled a change of the CRD's storage version).
    pub async fn wait_storage_version(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        storage_version: &str,
    ) {
        let mut rx = self.shared.served_changes.subscribe();
        // An error means the sender is gone with the server: nothing left to wait for.
        let _ = rx
            .wait_for(|_| {
                self.shared
                    .find(group, version, plural)
                    .is_some_and(|d| d.storage_version == storage_version)
            })
            .await;
    }

    /// Ends every open watch (clients see their streams end and must rewatch).
    pub fn end_all_watches(&self) {
        let old = std::mem::take(&mut *self.shared.watch_end.lock());
        old.cancel();
        for cache in self.shared.served().caches() {
            cache.terminate_all_watchers();
        }
    }

    /// Makes the next `n` requests fail with HTTP `code` and a matching Status.
    pub fn fail_next_requests(&self, n: u32, code: u16) {
        *self.shared.faults.fail_next.lock() = (n > 0).then_some((n, code));
    }

    /// Delays every response by `delay` (zero: none). With the `testing` feature.
    #[cfg(feature = "testing")]
    pub fn set_response_delay(&self, delay: Duration) {
        *self.shared.faults.delay.lock() = delay;
    }

    /// Compacts the storage's history at its current revision: watches and exact reads of older
    /// revisions are 410 Expired, and so are watches from before what each watch cache has
    /// reached (their event windows are emptied). Open watches continue.
    pub async fn compact_now(&self) -> Result<u64, ApiError> {
        let rev = self.storage_revision().await?;
        self.shared
            .storage
            .compact(rev)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        for cache in self.shared.served().caches() {
            cache.compact_window();
        }
        Ok(rev)
    }

    /// Sends a line that is not JSON to every open watch. With the `testing` feature.
    #[cfg(feature = "testing")]
    pub fn inject_malformed_watch_line(&self) {
        let bytes = bytes::Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{not json\n");
        for cache in self.shared.served().caches() {
            cache.broadcast_raw(&bytes);
        }
    }

    /// Stops the background tasks (caches, dispatchers) and ends every watch.
    pub fn shutdown(&self) {
        self.end_all_watches();
        self.shared.shutdown.cancel();
    }
}

impl ApiServer {
    /// Creates the namespaces every cluster has (`default`, `kube-system`, `kube-public`,
    /// `kube-node-lease`) unless they exist (a persistent storage may have them).
    pub async fn ensure_system_namespaces(&self) -> Result<(), ApiError> {
        let served = self.shared.served();
        let Some(def) = served.resources.iter().find(|d| is_namespace(d)) else {
            return Ok(());
        };
        for name in SYSTEM_NAMESPACES {
            let obj = Object::from_value(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .map_err(|e| ApiError::internal(e.to_string()))?;
            match crate::registry::create_object(&self.shared, def, obj).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the controllers (garbage collector, namespace controller, pod grace) have
    /// seen the storage's current revision through every resource served now and had nothing
    /// left to do: what a test waits for
    /// after a delete, instead of sleeping. Pods still in their grace period do not count. Of
    /// the CRD controller it waits only for the CRDs stored at start to be served
    /// ([`ApiServer::wait_crds_served`]); for a CRD written later, use
    /// [`ApiServer::wait_served`].
    pub async fn wait_controllers_idle(&self) -> Result<(), ApiError> {
        self.wait_crds_served().await;
        let at = crate::controllers::progress::Idle {
            served: *self.shared.served_changes.borrow(),
            revision: self.storage_revision().await?,
        };
        if self.shared.controllers.wait_idle(at).await {
            Ok(())
        } else {
            Err(ApiError::internal("the controllers have stopped"))
        }
    }
}
