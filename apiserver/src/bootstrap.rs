//! The objects a fresh control plane has: the system namespaces, the `kubernetes` Service of
//! `default` with its Endpoints and EndpointSlice (what kube-apiserver's bootstrap controller,
//! pkg/controlplane/controller/kubernetesservice, keeps), and the system PriorityClasses
//! (pkg/apis/scheduling's SystemPriorityClasses, created by the
//! `scheduling/bootstrap-system-priority-classes` post-start hook).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;

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

impl ApiServer {
    /// Creates what a fresh control plane has, unless it exists (a persistent storage may
    /// have it): the system namespaces ([`ApiServer::ensure_system_namespaces`]), the
    /// `kubernetes` Service in `default` (port 443 to `advertise`'s port, cluster IP the first
    /// of the service range) with its Endpoints and EndpointSlice (address `advertise`'s,
    /// 127.0.0.1 when unspecified), and the `system-node-critical` / `system-cluster-critical`
    /// PriorityClasses. Until it has run, `/readyz` reports the post-start hooks
    /// `bootstrap-controller` and `scheduling/bootstrap-system-priority-classes` unfinished.
    pub async fn ensure_cluster_objects(&self, advertise: SocketAddr) -> Result<(), ApiError> {
        self.ensure_system_namespaces().await?;
        let objects = kubernetes_service(self.shared.config.service_cidr, advertise)
            .into_iter()
            .chain(system_priority_classes());
        for value in objects {
            let obj = Object::from_value(value).map_err(|e| ApiError::internal(e.to_string()))?;
            match self.create(obj).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        self.shared.bootstrapped.store(true, Ordering::Release);
        Ok(())
    }
}
