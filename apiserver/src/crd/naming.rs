//! The names a CRD is served under, as apiextensions-apiserver's `NamingConditionController`
//! (`pkg/controller/status/naming_controller.go`) and `EstablishingController` decide them: a
//! name another CRD of the same group has accepted (its plural, singular and short names
//! against resource names, its kind and list kind against kinds) is refused, the CRD keeps the
//! names it had accepted for those, gets `NamesAccepted=False` with the conflict's reason and
//! message, and is `Established` only once all its names were accepted (an established CRD
//! stays established). Kubernetes checks only other CRDs, not built-in resources.

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

/// The condition type of accepted names.
const NAMES_ACCEPTED: &str = "NamesAccepted";
/// The condition type of a served CRD.
const ESTABLISHED: &str = "Established";

/// What the CRD controllers decide about a CRD's names.
pub(crate) struct Naming {
    /// `status.acceptedNames` after the decision (what the resource is served under).
    pub(crate) accepted: CustomResourceDefinitionNames,
    /// The status to write as a merge patch, None when nothing changes.
    pub(crate) patch: Option<Value>,
    /// Whether the resource is served: established, or with its names accepted.
    pub(crate) served: bool,
}

/// Whether `crd`'s names are the ones it was given (nothing to decide against other CRDs: the
/// naming controller skips it).
pub(crate) fn names_settled(crd: &CustomResourceDefinition) -> bool {
    let accepted = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref());
    accepted.is_some_and(|names| same_names(&crd.spec.names, names))
}

/// Decides `crd`'s accepted names and conditions against the CRDs of `all` (any group; the
/// CRD itself may be among them; not read when its names are settled).
pub(crate) fn decide_names(
    crd: &CustomResourceDefinition,
    all: &[CustomResourceDefinition],
) -> Naming {
    let status = crd.status.clone().unwrap_or_default();
    let mut conditions = status.conditions.clone().unwrap_or_default();
    let mut accepted = status.accepted_names.clone().unwrap_or_default();
    if !names_settled(crd) {
        let (names, condition) = names_and_condition(crd, all);
        let current = find(&conditions, NAMES_ACCEPTED);
        let equivalent = current.is_some_and(|c| {
            c.status == condition.status
                && c.reason == condition.reason
                && c.message == condition.message
        });
        if names != accepted || !equivalent {
            accepted = names;
            let established = find(&conditions, ESTABLISHED).cloned();
            let established = established.unwrap_or_else(|| {
                condition_of(
                    ESTABLISHED,
                    "False",
                    "NotAccepted",
                    "not all names are accepted",
                )
            });
            set_condition(&mut conditions, condition);
            set_condition(&mut conditions, established);
        }
    }
    // The establishing controller: accepted names make the CRD established.
    let names_accepted = is_true(&conditions, NAMES_ACCEPTED);
    if names_accepted && !is_true(&conditions, ESTABLISHED) {
        set_condition(
            &mut conditions,
            condition_of(
                ESTABLISHED,
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        );
    }
    let served = names_accepted || is_true(&conditions, ESTABLISHED);
    let stored = super::stored_versions(crd);
    let unchanged = status.accepted_names.as_ref() == Some(&accepted)
        && status.conditions.as_ref() == Some(&conditions)
        && status.stored_versions.as_ref() == Some(&stored);
    let patch = (!unchanged).then(|| {
        serde_json::json!({"status": {
            "acceptedNames": accepted,
            "storedVersions": stored,
            "conditions": conditions,
        }})
    });
    Naming {
        accepted,
        patch,
        served,
    }
}

/// `calculateNamesAndConditions`: each requested name that is the one already accepted or not
/// in use is accepted; the last conflict found gives the condition's reason and message.
fn names_and_condition(
    crd: &CustomResourceDefinition,
    all: &[CustomResourceDefinition],
) -> (
    CustomResourceDefinitionNames,
    CustomResourceDefinitionCondition,
) {
    let (resources, kinds) = names_in_use(&crd.spec.group, all);
    let requested = &crd.spec.names;
    let accepted = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_default();
    let mut names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;
    match fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural.clone_from(&requested.plural),
        Err(message) => conflict = Some(("PluralConflict", message)),
    }
    let (singular, accepted_singular) = (text(&requested.singular), text(&accepted.singular));
    match fresh(singular, accepted_singular, &resources) {
        Ok(()) => names.singular.clone_from(&requested.singular),
        Err(message) => conflict = Some(("SingularConflict", message)),
    }
    let requested_short = requested.short_names.as_deref().unwrap_or_default();
    let accepted_short = accepted.short_names.as_deref().unwrap_or_default();
    if requested_short != accepted_short {
        let errors: Vec<String> = requested_short
            .iter()
            .filter(|s| !accepted_short.contains(s))
            .filter(|s| **s != accepted.plural && s.as_str() != accepted_singular)
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        if errors.is_empty() {
            names.short_names.clone_from(&requested.short_names);
        } else {
            conflict = Some(("ShortNamesConflict", aggregate(&errors)));
        }
    }
    match fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind.clone_from(&requested.kind),
        Err(message) => conflict = Some(("KindConflict", message)),
    }
    let (list_kind, accepted_list) = (text(&requested.list_kind), text(&accepted.list_kind));
    match fresh(list_kind, accepted_list, &kinds) {
        Ok(()) => names.list_kind.clone_from(&requested.list_kind),
        Err(message) => conflict = Some(("ListKindConflict", message)),
    }
    names.categories.clone_from(&requested.categories);
    let condition = match conflict {
        Some((reason, message)) => condition_of(NAMES_ACCEPTED, "False", reason, &message),
        None => condition_of(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
    };
    (names, condition)
}

/// `getAcceptedNamesForGroup`: the resource names and kinds the CRDs of `group` have accepted.
fn names_in_use<'a>(
    group: &str,
    all: &'a [CustomResourceDefinition],
) -> (BTreeSet<&'a str>, BTreeSet<&'a str>) {
    let (mut resources, mut kinds) = (BTreeSet::new(), BTreeSet::new());
    let accepted = all
        .iter()
        .filter(|c| c.spec.group == group)
        .filter_map(|c| c.status.as_ref()?.accepted_names.as_ref());
    for names in accepted {
        resources.insert(names.plural.as_str());
        resources.insert(text(&names.singular));
        resources.extend(names.short_names.iter().flatten().map(String::as_str));
        kinds.insert(names.kind.as_str());
        kinds.insert(text(&names.list_kind));
    }
    (resources, kinds)
}

/// `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &BTreeSet<&str>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        return Ok(());
    }
    Err(format!("{requested:?} is already in use"))
}

/// The message of apimachinery's error aggregate: one error as it is, several deduplicated in
/// brackets.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Names compared as Go's semantic equality does: absent and empty are the same.
fn same_names(a: &CustomResourceDefinitionNames, b: &CustomResourceDefinitionNames) -> bool {
    let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
    a.plural == b.plural
        && a.kind == b.kind
        && text(&a.singular) == text(&b.singular)
        && text(&a.list_kind) == text(&b.list_kind)
        && list(&a.short_names) == list(&b.short_names)
        && list(&a.categories) == list(&b.categories)
}

fn text(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or_default()
}

fn find<'a>(
    conditions: &'a [CustomResourceDefinitionCondition],
    ty: &str,
) -> Option<&'a CustomResourceDefinitionCondition> {
    conditions.iter().find(|c| c.type_ == ty)
}

fn is_true(conditions: &[CustomResourceDefinitionCondition], ty: &str) -> bool {
    find(conditions, ty).is_some_and(|c| c.status == "True")
}

fn condition_of(
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: ty.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_transition_time: None,
        // The naming controller (as read) sets none.
        observed_generation: None,
    }
}

/// `SetCRDCondition`: the transition time moves only when the status changes.
fn set_condition(
    conditions: &mut Vec<CustomResourceDefinitionCondition>,
    mut new: CustomResourceDefinitionCondition,
) {
    let now = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            new.last_transition_time = now;
            conditions.push(new);
        }
        Some(existing) => {
            if existing.status != new.status || existing.last_transition_time.is_none() {
                existing.last_transition_time = now;
            }
            existing.status = new.status;
            existing.reason = new.reason;
            existing.message = new.message;
        }
    }
}
