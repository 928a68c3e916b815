//! [`Shared`]: what every request and the write path see of the server (storage, resources,
//! watch caches, settings, injected faults), and the server-wide [`ServerConfig`].

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::access::Policy;
use crate::cache::{CacheConfig, WatchCache};
use crate::error::ApiError;
use crate::openapi::OpenApi;
use crate::resource::ResourceDef;
use crate::served::{CacheStarter, Served};
use crate::storage::{DEFAULT_HISTORY, Storage};

/// The Kubernetes version the server reports (`/version`, the OpenAPI documents).
pub(crate) const GIT_VERSION: &str = "v1.34.0-kcache";

/// Server-wide settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Watch cache and dispatcher settings (shared by every resource).
    pub cache: CacheConfig,
    /// The default watch timeout is this × (1 + random) (Kubernetes: 1800 s).
    pub min_request_timeout: Duration,
    /// Request bodies larger than this are 413 (Kubernetes: 3 MiB).
    pub max_body_bytes: usize,
    /// When set, every request needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// How many writes the in-memory storage keeps before compacting.
    pub history: usize,
    /// The range services' cluster IPs are allocated from (Kubernetes' default: 10.96.0.0/12).
    pub service_cidr: Ipv4Cidr,
    /// The ports NodePort and LoadBalancer services' node ports are allocated from
    /// (Kubernetes' default: 30000-32767).
    pub service_node_port_range: PortRange,
}

/// A range of ports, such as `30000-32767` (Kubernetes' `net.PortRange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// The first port of the range.
    pub base: u16,
    /// How many ports the range holds (at least 1).
    pub size: u16,
}

impl PortRange {
    /// Whether `port` is in the range.
    pub fn contains(&self, port: i64) -> bool {
        let base = i64::from(self.base);
        (base..base + i64::from(self.size)).contains(&port)
    }
}

impl std::fmt::Display for PortRange {
    /// `base-last`, as Kubernetes prints a range in its errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = u32::from(self.base) + u32::from(self.size) - 1;
        write!(f, "{}-{last}", self.base)
    }
}

impl Default for PortRange {
    fn default() -> Self {
        Self {
            base: 30000,
            size: 2768,
        }
    }
}

/// Why text is not a port range.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a port range such as 30000-32767, 30000+2768 or 30000")]
pub struct PortRangeError(String);

impl std::str::FromStr for PortRange {
    type Err = PortRangeError;

    /// Parses `low-high`, `low+offset` or a single port (`net.ParsePortRange`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PortRangeError(s.to_owned());
        let port = |t: &str| t.trim().parse::<u16>().map_err(|_| bad());
        let (base, last) = if let Some((low, high)) = s.split_once('-') {
            (port(low)?, port(high)?)
        } else if let Some((low, offset)) = s.split_once('+') {
            let low = port(low)?;
            (low, low.checked_add(port(offset)?).ok_or_else(bad)?)
        } else {
            let single = port(s)?;
            (single, single)
        };
        if base == 0 || last < base {
            return Err(bad());
        }
        let size = last - base + 1;
        Ok(Self { base, size })
    }
}

/// An IPv4 range, such as `10.96.0.0/12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Cidr {
    /// The first address of the range.
    pub network: Ipv4Addr,
    /// The length of the network prefix (0 to 32).
    pub prefix_len: u8,
}

impl Ipv4Cidr {
    /// How many addresses the range holds.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix_len.min(32)))
    }

    /// The address at `offset` from the start of the range.
    pub fn nth(&self, offset: u64) -> Option<Ipv4Addr> {
        let start = u64::from(u32::from(self.network));
        let ip = u32::try_from(start + offset).ok()?;
        (offset < self.size()).then(|| Ipv4Addr::from(ip))
    }

    /// Where `ip` is in the range (None: outside it).
    pub fn offset_of(&self, ip: Ipv4Addr) -> Option<u64> {
        let offset = u64::from(u32::from(ip)).checked_sub(u64::from(u32::from(self.network)))?;
        (offset < self.size()).then_some(offset)
    }
}

/// Why text is not an IPv4 range.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an IPv4 range such as 10.96.0.0/12")]
pub struct Ipv4CidrError(String);

impl std::str::FromStr for Ipv4Cidr {
    type Err = Ipv4CidrError;

    /// Parses `A.B.C.D/N` (N at most 30: a range needs room for a service).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || Ipv4CidrError(s.to_owned());
        let (addr, len) = s.split_once('/').ok_or_else(bad)?;
        let network: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let prefix_len: u8 = len.parse().map_err(|_| bad())?;
        if prefix_len > 30 {
            return Err(bad());
        }
        let mask = u32::MAX
            .checked_shl(32 - u32::from(prefix_len))
            .unwrap_or(0);
        Ok(Self {
            network: Ipv4Addr::from(u32::from(network) & mask),
            prefix_len,
        })
    }
}

impl Default for Ipv4Cidr {
    fn default() -> Self {
        Self {
            network: Ipv4Addr::new(10, 96, 0, 0),
            prefix_len: 12,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            cache: CacheConfig::default(),
            min_request_timeout: Duration::from_secs(1800),
            max_body_bytes: 3 * 1024 * 1024,
            token: None,
            history: DEFAULT_HISTORY,
            service_cidr: Ipv4Cidr::default(),
            service_node_port_range: PortRange::default(),
        }
    }
}

/// Faults injected into the responses (for tests of clients).
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pub(crate) fail_next: Mutex<Option<(u32, u16)>>,
    pub(crate) delay: Mutex<Duration>,
}

impl Faults {
    /// The error the next request must fail with, if any (consumes one).
    pub(crate) fn take_failure(&self) -> Option<ApiError> {
        let mut f = self.fail_next.lock();
        let (n, code) = (*f)?;
        *f = if n > 1 { Some((n - 1, code)) } else { None };
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        let mut err = ApiError::new(code, reason, format!("injected failure ({code})"));
        if code == 429 || code == 503 {
            err = err.with_details(serde_json::json!({"retryAfterSeconds": 1}));
        }
        Some(err)
    }
}

pub(crate) struct Shared {
    pub(crate) storage: Arc<dyn Storage>,
    /// The served resources and their caches (see [`Shared::serve`]).
    pub(crate) served: Mutex<Arc<Served>>,
    pub(crate) config: ServerConfig,
    pub(crate) faults: Faults,
    pub(crate) watch_end: Mutex<CancellationToken>,
    pub(crate) shutdown: CancellationToken,
    /// What the authorization reviews answer.
    pub(crate) policy: Policy,
    /// Whether the garbage collector runs (and deletes add its finalizers).
    pub(crate) garbage_collection: bool,
    /// Where the webhooks' services listen ([`crate::ApiServerBuilder::webhook_service`]).
    pub(crate) webhook_services: Vec<ServiceAddress>,
    /// The in-server controllers' progress.
    pub(crate) controllers: crate::controllers::progress::Progress,
    /// Bumped at every change of the served set (see [`Shared::serve`]).
    pub(crate) served_changes: tokio::sync::watch::Sender<u64>,
    /// True once the CRD controller has served the CRDs stored when the server started.
    pub(crate) crds_served: tokio::sync::watch::Sender<bool>,
    /// The OpenAPI documents, generated on first use after each change of the served set.
    pub(crate) openapi: Mutex<Option<Arc<OpenApi>>>,
    /// The service-account token issuer (None: its key could not be made; token requests
    /// then fail with 500 and no token authenticates).
    pub(crate) tokens: Option<crate::tokens::Issuer>,
    /// True once the objects of a fresh control plane exist
    /// ([`ApiServer::ensure_cluster_objects`](crate::ApiServer::ensure_cluster_objects)).
    pub(crate) bootstrapped: std::sync::atomic::AtomicBool,
}

/// Where an admission webhook's service listens (`ApiServerBuilder::webhook_service`).
#[derive(Debug, Clone)]
pub(crate) struct ServiceAddress {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) address: std::net::SocketAddr,
}

impl Shared {
    /// A snapshot of the served resources.
    pub(crate) fn served(&self) -> Arc<Served> {
        Arc::clone(&self.served.lock())
    }

    /// The resource served at group/version/plural.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceDef>> {
        self.served().find(group, version, plural).cloned()
    }

    /// The watch cache of `def`'s group and plural.
    pub(crate) fn cache(&self, def: &ResourceDef) -> Option<Arc<WatchCache>> {
        self.served().cache(def).cloned()
    }

    /// Serves `defs` as the versions of `group`/`plural` (the first is stored and cached),
    /// starting its watch cache if it has none; no defs: stops serving it.
    pub(crate) fn serve(&self, group: &str, plural: &str, defs: Vec<Arc<ResourceDef>>) {
        let starter = CacheStarter {
            storage: &self.storage,
            config: &self.config.cache,
            shutdown: &self.shutdown,
        };
        let mut served = self.served.lock();
        *served = Arc::new(served.with(group, plural, defs, &starter));
        drop(served);
        *self.openapi.lock() = None;
        self.served_changes.send_modify(|n| *n += 1);
    }

    pub(crate) fn watch_token(&self) -> CancellationToken {
        self.watch_end.lock().clone()
    }

    pub(crate) fn openapi(&self) -> Arc<OpenApi> {
        let mut doc = self.openapi.lock();
        let doc = doc.get_or_insert_with(|| {
            Arc::new(OpenApi::generate(&self.served().resources, GIT_VERSION))
        });
        Arc::clone(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_hold_their_addresses() {
        let cidr: Ipv4Cidr = "10.96.0.0/12".parse().unwrap();
        assert_eq!(cidr, Ipv4Cidr::default());
        assert_eq!(cidr.size(), 1 << 20);
        assert_eq!(cidr.nth(1), Some(Ipv4Addr::new(10, 96, 0, 1)));
        assert_eq!(
            cidr.offset_of(Ipv4Addr::new(10, 111, 255, 255)),
            Some((1 << 20) - 1)
        );
        assert_eq!(cidr.offset_of(Ipv4Addr::new(10, 112, 0, 0)), None);
        for bad in ["10.96.0.0", "10.96.0.0/31", "x/12", "10.96.0.0/x"] {
            assert!(bad.parse::<Ipv4Cidr>().is_err(), "{bad}");
        }
    }

    /// The forms of Kubernetes' `net.ParsePortRange` (`--service-node-port-range`).
    #[test]
    fn port_ranges_parse_as_kubernetes_flags() {
        let range = |base, size| PortRange { base, size };
        assert_eq!(
            "30000-32767".parse::<PortRange>().ok(),
            Some(range(30000, 2768))
        );
        assert_eq!(
            "30000+100".parse::<PortRange>().ok(),
            Some(range(30000, 101))
        );
        assert_eq!("8080".parse::<PortRange>().ok(), Some(range(8080, 1)));
        assert_eq!(PortRange::default().to_string(), "30000-32767");
        assert!(PortRange::default().contains(32767) && !PortRange::default().contains(32768));
        for bad in ["", "x", "200-100", "0-10", "1-70000"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad}");
        }
    }
}
