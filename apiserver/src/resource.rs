//! [`ResourceDef`]: the resources the server serves, built-in and custom.

use std::sync::Arc;

use kube_core::ApiResource;
use serde_json::Value;

/// One served resource: its [`ApiResource`], scope, names for discovery and the field selectors it
/// supports (besides `metadata.name` and `metadata.namespace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    /// Group, version, kind and plural.
    pub api: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The lower-case singular name.
    pub singular: String,
    /// Short names for kubectl (`po`, `svc`, ...).
    pub short_names: Vec<String>,
    /// Extra field selector paths (`spec.nodeName`, `status.phase`, ...).
    pub fields: Vec<String>,
    /// The field whose exact-match watchers are indexed (pods: `spec.nodeName`).
    pub trigger_field: Option<String>,
    /// Whether the resource has a `status` subresource (writes to the main resource then keep
    /// the stored status, and `/status` writes change only the status).
    pub status_subresource: bool,
    /// Whether the resource has a `scale` subresource (an `autoscaling/v1` `Scale` of
    /// `spec.replicas`).
    pub scale_subresource: bool,
    /// The categories it belongs to in discovery (`all` for what `kubectl get all` lists).
    pub categories: Vec<String>,
    /// Whether the server keeps `metadata.generation` (set to 1 on create, bumped when anything
    /// but metadata and status changes). Kinds without a spec, such as ConfigMaps, have none.
    pub generation: bool,
    /// The `openAPIV3Schema` objects are pruned, defaulted and validated with (custom
    /// resources of a CustomResourceDefinition version with a schema).
    pub schema: Option<Arc<Value>>,
    /// The columns of its Table when it has no printer of its own (a custom resource's
    /// `additionalPrinterColumns`; by default its age).
    pub printer_columns: Vec<PrinterColumn>,
    /// The version objects of the resource are stored in (a CRD's storage version; for a
    /// built-in kind served in several versions, the one Kubernetes stores). Objects written
    /// through another version are converted (module `convert`).
    pub storage_version: String,
    /// The `Warning` every request to this version carries (a deprecated CustomResourceDefinition
    /// version's `deprecationWarning`, or `<group>/<version> <Kind> is deprecated`).
    pub deprecation_warning: Option<String>,
}

impl ResourceDef {
    /// A resource without short names, extra fields or status subresource.
    pub fn new(api: ApiResource, namespaced: bool) -> Self {
        let singular = api.kind.to_ascii_lowercase();
        let storage_version = api.version.clone();
        Self {
            api,
            namespaced,
            singular,
            short_names: Vec::new(),
            fields: Vec::new(),
            trigger_field: None,
            status_subresource: false,
            scale_subresource: false,
            categories: Vec::new(),
            generation: false,
            schema: None,
            printer_columns: PrinterColumn::defaults(),
            storage_version,
            deprecation_warning: None,
        }
    }

    /// A custom resource (status subresource and generation on).
    pub fn custom(api: ApiResource, namespaced: bool) -> Self {
        Self {
            status_subresource: true,
            generation: true,
            ..Self::new(api, namespaced)
        }
    }

    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        Self::new(
            ApiResource {
                group: group.into(),
                version: version.into(),
                api_version,
                kind: kind.into(),
                plural: plural.into(),
            },
            namespaced,
        )
    }

    #[must_use]
    fn short(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    #[must_use]
    fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// Has a `scale` subresource.
    #[must_use]
    fn with_scale(mut self) -> Self {
        self.scale_subresource = true;
        self
    }

    /// Keeps `metadata.generation` (kinds with a spec).
    #[must_use]
    fn with_generation(mut self) -> Self {
        self.generation = true;
        self
    }

    /// In the `all` category (what `kubectl get all` lists).
    #[must_use]
    fn in_all(mut self) -> Self {
        self.categories = vec!["all".to_owned()];
        self
    }

    /// The `apiVersion` of stored objects: the group and [`ResourceDef::storage_version`].
    pub fn storage_api_version(&self) -> String {
        if self.api.group.is_empty() {
            self.storage_version.clone()
        } else {
            format!("{}/{}", self.api.group, self.storage_version)
        }
    }

    /// The storage key prefix of the resource: `{group}/{plural}/`.
    pub fn key_prefix(&self) -> String {
        format!("{}/{}/", self.api.group, self.api.plural)
    }

    /// The storage key of an object.
    pub fn storage_key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace.filter(|ns| self.namespaced && !ns.is_empty()) {
            Some(ns) => format!("{}{ns}/{name}", self.key_prefix()),
            None => format!("{}{name}", self.key_prefix()),
        }
    }

    /// Whether `field` may be used in a field selector.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || field == "metadata.namespace"
            || self.fields.iter().any(|f| f == field)
    }

    /// The `kind` of lists: `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.api.kind)
    }

    /// The resource named as in messages: `pods`, `deployments.apps`.
    pub fn qualified_plural(&self) -> String {
        if self.api.group.is_empty() {
            self.api.plural.clone()
        } else {
            format!("{}.{}", self.api.plural, self.api.group)
        }
    }
}

/// The built-in resources: namespaces, pods, nodes, services, endpoints, configmaps, secrets,
/// events (core and `events.k8s.io/v1`), serviceaccounts, resourcequotas, persistentvolumes, persistentvolumeclaims,
/// deployments, replicasets, statefulsets, daemonsets, horizontalpodautoscalers (autoscaling/v2 and v1),
/// jobs, cronjobs, leases, endpointslices, networkpolicies, ingresses, poddisruptionbudgets,
/// priorityclasses, storageclasses, roles, rolebindings, clusterroles and clusterrolebindings, and
/// the cluster-level kinds of limitranges, podtemplates, controllerrevisions, ingressclasses,
/// certificatesigningrequests, runtimeclasses, flowcontrol, CSI and volume attachments.
pub fn builtin_resources() -> Vec<ResourceDef> {
    let b = ResourceDef::builtin;
    let mut pods = b("", "v1", "Pod", "pods", true)
        .short(&["po"])
        .with_status()
        .with_generation()
        .in_all();
    pods.trigger_field = Some("spec.nodeName".into());
    let rbac = "rbac.authorization.k8s.io";
    // Served as v2 (stored) and v1, converted between them (module `convert`).
    let hpa = |version: &str| {
        let mut def = b(
            "autoscaling",
            version,
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            true,
        )
        .short(&["hpa"])
        .with_status()
        .in_all();
        "v2".clone_into(&mut def.storage_version);
        def
    };
    let mut defs = vec![
        b("", "v1", "Namespace", "namespaces", false)
            .short(&["ns"])
            .with_status(),
        pods,
        b("", "v1", "Node", "nodes", false)
            .short(&["no"])
            .with_status(),
        b("", "v1", "Service", "services", true)
            .short(&["svc"])
            .with_status()
            .in_all(),
        b("", "v1", "Endpoints", "endpoints", true).short(&["ep"]),
        b("", "v1", "ConfigMap", "configmaps", true).short(&["cm"]),
        b("", "v1", "Secret", "secrets", true),
        b("", "v1", "Event", "events", true).short(&["ev"]),
        b("", "v1", "ServiceAccount", "serviceaccounts", true).short(&["sa"]),
        b("", "v1", "ResourceQuota", "resourcequotas", true)
            .short(&["quota"])
            .with_status(),
        b("", "v1", "PersistentVolume", "persistentvolumes", false)
            .short(&["pv"])
            .with_status(),
        b(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
        )
        .short(&["pvc"])
        .with_status(),
        b("apps", "v1", "Deployment", "deployments", true)
            .short(&["deploy"])
            .with_status()
            .with_generation()
            .with_scale()
            .in_all(),
        b("apps", "v1", "ReplicaSet", "replicasets", true)
            .short(&["rs"])
            .with_status()
            .with_generation()
            .with_scale()
            .in_all(),
        b("apps", "v1", "StatefulSet", "statefulsets", true)
            .short(&["sts"])
            .with_status()
            .with_generation()
            .with_scale()
            .in_all(),
        b("apps", "v1", "DaemonSet", "daemonsets", true)
            .short(&["ds"])
            .with_status()
            .with_generation()
            .in_all(),
        hpa("v2"),
        hpa("v1"),
        b("batch", "v1", "Job", "jobs", true)
            .with_status()
            .with_generation()
            .in_all(),
        b("batch", "v1", "CronJob", "cronjobs", true)
            .short(&["cj"])
            .with_status()
            .with_generation()
            .in_all(),
        b("coordination.k8s.io", "v1", "Lease", "leases", true),
        // Kept apart from the core Events (a real API server stores both in one table).
        b("events.k8s.io", "v1", "Event", "events", true),
        b(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
        ),
        b(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
        )
        .short(&["netpol"])
        .with_generation(),
        b("networking.k8s.io", "v1", "Ingress", "ingresses", true)
            .short(&["ing"])
            .with_status()
            .with_generation(),
        b(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
        )
        .short(&["pdb"])
        .with_status()
        .with_generation(),
        b(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            false,
        )
        .short(&["pc"]),
        b(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            false,
        )
        .short(&["sc"]),
        b(rbac, "v1", "Role", "roles", true),
        b(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        )
        .short(&["crd", "crds"])
        .with_status()
        .with_generation(),
        b(rbac, "v1", "RoleBinding", "rolebindings", true),
        b(rbac, "v1", "ClusterRole", "clusterroles", false),
        b(
            rbac,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
        ),
    ];
    defs.extend(cluster_resources());
    defs.extend(admission_resources());
    for def in &mut defs {
        def.fields = crate::fields::builtin_fields(&def.api.api_version, &def.api.kind)
            .iter()
            .map(|f| (*f).to_owned())
            .collect();
    }
    defs
}

/// The resources a 1.34 cluster serves that controllers watch beside the workloads:
/// limitranges, podtemplates, controllerrevisions, ingressclasses, certificatesigningrequests,
/// runtimeclasses, flowschemas, prioritylevelconfigurations, csidrivers, csinodes,
/// csistoragecapacities and volumeattachments.
fn cluster_resources() -> Vec<ResourceDef> {
    let b = ResourceDef::builtin;
    let flowcontrol = "flowcontrol.apiserver.k8s.io";
    vec![
        b("", "v1", "LimitRange", "limitranges", true).short(&["limits"]),
        b("", "v1", "PodTemplate", "podtemplates", true),
        b(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            true,
        ),
        b(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            false,
        )
        .with_generation(),
        b(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            false,
        )
        .short(&["csr"])
        .with_status(),
        b("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false),
        b(flowcontrol, "v1", "FlowSchema", "flowschemas", false)
            .with_status()
            .with_generation(),
        b(
            flowcontrol,
            "v1",
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            false,
        )
        .with_status()
        .with_generation(),
        b("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false),
        b("storage.k8s.io", "v1", "CSINode", "csinodes", false),
        b(
            "storage.k8s.io",
            "v1",
            "CSIStorageCapacity",
            "csistoragecapacities",
            true,
        ),
        b(
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            "volumeattachments",
            false,
        )
        .with_status(),
    ]
}

/// The `admissionregistration.k8s.io/v1` resources: webhook configurations and
/// ValidatingAdmissionPolicies with their bindings (all cluster-scoped, with generations).
fn admission_resources() -> Vec<ResourceDef> {
    let b = ResourceDef::builtin;
    let group = "admissionregistration.k8s.io";
    vec![
        b(
            group,
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
        )
        .with_generation(),
        b(
            group,
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        )
        .with_generation(),
        b(
            group,
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
        )
        .with_status()
        .with_generation(),
        b(
            group,
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
        )
        .with_generation(),
    ]
}

/// A column of a table, as a CRD's `additionalPrinterColumns` entry: what it is called, its
/// type, and the JSON path of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The column's name (`kubectl` shows it upper-cased).
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// An OpenAPI format (`name` marks the name column).
    pub format: String,
    /// What the column shows.
    pub description: String,
    /// 0: always shown; more: only with `-o wide`.
    pub priority: i32,
    /// Where the value is, as a simple JSON path (`.spec.replicas`).
    pub json_path: String,
}

impl PrinterColumn {
    /// The columns of a resource without printer columns: its creation time as `Age`.
    pub fn defaults() -> Vec<Self> {
        vec![Self {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }]
    }
}
