//! The objects a fresh control plane has: the system namespaces, the `kubernetes` Service of
//! `default` with its Endpoints and EndpointSlice (what kube-apiserver's bootstrap controller,
//! pkg/controlplane/controller/kubernetesservice, keeps), and the system PriorityClasses
//! (pkg/apis/scheduling's SystemPriorityClasses, created by the
//! `scheduling/bootstrap-system-priority-classes` post-start hook).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;

use kube_core::Resource;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::object::Object;
use crate::server::ApiServer;
use crate::shared::Ipv4Cidr;

/// The `kubernetes` Service, Endpoints and EndpointSlice for an API server at `advertise`
/// (its cluster IP the first of `cidr`, as the bootstrap controller's).
fn kubernetes_service(cidr: Ipv4Cidr, advertise: SocketAddr) -> Vec<Value> {
    let ip = match advertise.ip() {
        IpAddr::V4(ip) if !ip.is_unspecified() => ip,
        _ => Ipv4Addr::LOCALHOST,
    };
    let port = advertise.port();
    let cluster_ip = cidr.nth(1).unwrap_or(cidr.network).to_string();
    let https = json!({"name": "https", "port": port, "protocol": "TCP"});
    vec![
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {
                "name": "kubernetes", "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "type": "ClusterIP", "sessionAffinity": "None",
                "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            },
        }),
        json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {
                "name": "kubernetes", "namespace": "default",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": [https]}],
        }),
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": "kubernetes", "namespace": "default",
                "labels": {"kubernetes.io/service-name": "kubernetes"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
            "ports": [https],
        }),
    ]
}

/// `system-node-critical` and `system-cluster-critical`, with Kubernetes' values and
/// descriptions.
fn system_priority_classes() -> Vec<Value> {
    [
        (
            "system-node-critical",
            2_000_001_000_i64,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ]
    .into_iter()
    .map(|(name, value, description)| {
        json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value, "globalDefault": false, "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        })
    })
    .collect()
}

/// The fields of an existing object the bootstrap controller sets back to what it wants:
/// the `kubernetes` Service's ports and its endpoints (the server may have moved).
fn reconciled(kind: &str) -> &'static [&'static str] {
    match kind {
        "Service" => &["/spec/ports"],
        "Endpoints" => &["/subsets"],
        "EndpointSlice" => &["/endpoints", "/ports"],
        _ => &[],
    }
}

impl ApiServer {
    /// Sets the [`reconciled`] fields of the stored `want` (which exists) back to `want`'s,
    /// when they differ.
    async fn reconcile(&self, want: Object) -> Result<(), ApiError> {
        let pointers = reconciled(want.kind());
        let Some(def) = self.resource_for_kind(want.api_version(), want.kind()) else {
            return Ok(());
        };
        let name = want.meta().name.clone().unwrap_or_default();
        let namespace = want.meta().namespace.clone();
        let key = def.storage_key(namespace.as_deref(), &name);
        let current = self
            .shared
            .storage
            .get(key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let wanted = Value::Object(want.data());
        let differs = |cur: &Object| {
            let cur = Value::Object(cur.data());
            pointers.iter().any(|p| cur.pointer(p) != wanted.pointer(p))
        };
        if !current.as_deref().is_some_and(differs) {
            return Ok(());
        }
        tracing::info!(kind = want.kind(), %name, "updating the kubernetes service's endpoints");
        let target = crate::registry::Target {
            shared: &self.shared,
            def: &def,
            namespace: namespace.as_deref(),
            dry_run: false,
        };
        let f: crate::storage::UpdateFn = Box::new(move |cur| {
            let cur = cur.ok_or_else(|| ApiError::internal("the object went away"))?;
            let mut data = Value::Object(cur.data());
            for p in pointers {
                if let (Some(slot), Some(v)) = (data.pointer_mut(p), wanted.pointer(p)) {
                    slot.clone_from(v);
                }
            }
            let mut next = (**cur).clone();
            if let Value::Object(map) = data {
                next.set_data(map);
            }
            Ok(next)
        });
        crate::registry::guaranteed_update(&target, &name, f)
            .await
            .map(drop)
    }

    /// Creates what a fresh control plane has, unless it exists (a persistent storage may
    /// have it): the system namespaces ([`ApiServer::ensure_system_namespaces`]), the
    /// `kubernetes` Service in `default` (port 443 to `advertise`'s port, cluster IP the first
    /// of the service range) with its Endpoints and EndpointSlice (address `advertise`'s,
    /// 127.0.0.1 when unspecified), and the `system-node-critical` / `system-cluster-critical`
    /// PriorityClasses. The `kubernetes` Service's ports and its endpoints are set back to these
    /// when they differ (a server restarted on etcd at another port). Until it has run, `/readyz` reports the post-start hooks
    /// `bootstrap-controller` and `scheduling/bootstrap-system-priority-classes` unfinished.
    pub async fn ensure_cluster_objects(&self, advertise: SocketAddr) -> Result<(), ApiError> {
        self.ensure_system_namespaces().await?;
        let objects = kubernetes_service(self.shared.config.service_cidr, advertise)
            .into_iter()
            .chain(system_priority_classes());
        for value in objects {
            let obj = Object::from_value(value).map_err(|e| ApiError::internal(e.to_string()))?;
            match self.create(obj.clone()).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => self.reconcile(obj).await?,
                Err(e) => return Err(e),
            }
        }
        self.shared.bootstrapped.store(true, Ordering::Release);
        Ok(())
    }
}
