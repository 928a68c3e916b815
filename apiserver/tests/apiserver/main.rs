//! Integration tests of kcache-apiserver over real HTTP.

mod api_groups;
mod apply;
mod autoscaling;
mod binary;
mod cache_lists;
mod clients;
mod cluster_kinds;
mod collector;
mod crd_names;
mod crd_objects;
mod crd_versions;
mod crds;
mod crds_kube;
mod defaulting;
mod deletes;
#[cfg(feature = "etcd")]
mod etcd_cluster;
#[cfg(feature = "etcd")]
mod etcd_server_kill;
#[cfg(feature = "etcd")]
mod etcd_workload;
mod events;
mod faults;
mod field_validation;
mod group_rules;
mod group_tables;
mod hostile;
mod javascript;
mod kind_rules;
mod kubectl;
mod kubectl_apply;
mod kubectl_crds;
mod kubectl_directives;
mod kubectl_tables;
mod label_selectors;
mod lifecycle;
mod lists;
mod metadata;
mod noop_writes;
mod pod_spec;
mod pod_spec_fields;
mod pod_subresources;
mod pod_updates;
mod python;
mod quantities;
mod quota;
mod reflector;
mod served;
mod storage;
mod support;
mod tables;
mod tokens;
mod update_rules;
mod validation;
mod watches;
mod writes;
