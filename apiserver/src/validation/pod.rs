//! Pods and pod templates (`pkg/apis/core/validation/validation.go`: `ValidatePodSpec`,
//! `ValidatePodUpdate`): volumes (volume.rs), containers, init and ephemeral containers
//! (container.rs, with env.rs, resources.rs and probe.rs), restart and DNS policies, and what
//! a pod update may change.

use serde_json::{Map, Value};

use super::Cause;
use super::container::{containers, ephemeral_containers, init_containers, one_of};
use super::field::{forbidden, required};
use super::volume::volumes;

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
/// `validateDNSPolicy`'s list, in its (unsorted) order.
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];

/// The causes of an invalid pod spec at `path` (`spec`, `spec.template.spec`...), in the
/// order of `ValidatePodSpec`.
pub(crate) fn pod_spec(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    if spec
        .get("terminationGracePeriodSeconds")
        .is_none_or(Value::is_null)
    {
        causes.push(required(
            &format!("{path}.terminationGracePeriodSeconds"),
            "",
        ));
    }
    let volumes = volumes(spec, &format!("{path}.volumes"), causes);
    let list = spec.get("containers").and_then(Value::as_array);
    containers(
        list.map(Vec::as_slice),
        &format!("{path}.containers"),
        &volumes,
        causes,
    );
    init_containers(spec, &format!("{path}.initContainers"), &volumes, causes);
    ephemeral_containers(
        spec,
        &format!("{path}.ephemeralContainers"),
        &volumes,
        causes,
    );
    // `validateRestartPolicy`, `validateDNSPolicy`: set by defaulting, so required here.
    one_of(spec, "restartPolicy", path, RESTART_POLICIES, causes);
    one_of(spec, "dnsPolicy", path, DNS_POLICIES, causes);
}

/// What a pod update may change (`ValidatePodUpdate`).
const POD_UPDATE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The causes of a pod update changing its spec beyond what may change: images, the active
/// deadline, added tolerations and the grace period; the node name may be set once.
pub(crate) fn pod_update(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let (Some(new_spec), Some(old_spec)) = (new.get("spec"), old.get("spec")) else {
        return Vec::new();
    };
    let mut mutable = new_spec.clone();
    if let Some(m) = mutable.as_object_mut() {
        for list in ["containers", "initContainers"] {
            let old_images = old_spec.get(list).and_then(Value::as_array);
            let new_list = m.get_mut(list).and_then(Value::as_array_mut);
            if let (Some(old_list), Some(new_list)) = (old_images, new_list) {
                for (n, o) in new_list.iter_mut().zip(old_list) {
                    if let (Some(n), Some(image)) = (n.as_object_mut(), o.get("image")) {
                        n.insert("image".into(), image.clone());
                    }
                }
            }
        }
        for field in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            match old_spec.get(field) {
                Some(v) => m.insert(field.to_owned(), v.clone()),
                None => m.remove(field),
            };
        }
        let unbound = old_spec
            .get("nodeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if unbound {
            m.remove("nodeName");
        }
    }
    let mut old_cmp = old_spec.clone();
    if let Some(o) = old_cmp.as_object_mut()
        && o.get("nodeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        o.remove("nodeName");
    }
    if mutable == old_cmp {
        Vec::new()
    } else {
        vec![forbidden("spec", POD_UPDATE)]
    }
}
