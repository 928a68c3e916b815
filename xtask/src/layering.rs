//! The layering invariant: store ← deltafifo ← reflector ← informer ← factory; workqueue uses no
//! kcache crate and is used from informer up; apiserver uses store and reflector; the `kcache`
//! facade sits on top of every layer except apiserver; nothing published depends on apiserver
//! (except as a dev-dependency) or on the facade; leader election and the events recorder stand
//! beside the stack (no kcache dependency) and only the facade uses them; the test kit (bounded
//! waits, not published) depends on no kcache crate and any crate's tests may use it.

use crate::metadata::{Package, packages};

/// The layered stack, bottom first.
const STACK: &[&str] = &[
    "kcache-store",
    "kcache-deltafifo",
    "kcache-reflector",
    "kcache-informer",
    "kcache-factory",
];

const APISERVER: &str = "kcache-apiserver";

/// The work queue: no Kubernetes, no kcache dependency; used by the informer and above.
const WORKQUEUE: &str = "kcache-workqueue";

/// The level of the stack from which [`WORKQUEUE`] may be used.
const WORKQUEUE_USERS_FROM: &str = "kcache-informer";

/// Leader election: no kcache dependency; used by the facade only.
const LEADERELECTION: &str = "kcache-leaderelection";

/// The events recorder: no kcache dependency; used by the facade only.
const EVENTS: &str = "kcache-events";

/// The bounded waits of every crate's tests: no kcache dependency; a dev-dependency of any crate.
const TESTKIT: &str = "kcache-testkit";

/// The facade re-exporting the layers.
const FACADE: &str = "kcache";

/// Whether `name` is one of kcache's crates.
fn is_kcache(name: &str) -> bool {
    name == FACADE || name.starts_with("kcache-")
}

/// The kcache crates `crate_name` may depend on with normal (and build) dependencies.
fn allowed_below(crate_name: &str) -> Vec<&'static str> {
    if crate_name == APISERVER {
        return vec!["kcache-store", "kcache-reflector"];
    }
    if crate_name == FACADE {
        let mut all = STACK.to_vec();
        all.extend([WORKQUEUE, LEADERELECTION, EVENTS]);
        return all;
    }
    let Some(level) = STACK.iter().position(|c| *c == crate_name) else {
        return Vec::new();
    };
    let mut below = STACK[..level].to_vec();
    if STACK[..=level].contains(&WORKQUEUE_USERS_FROM) {
        below.push(WORKQUEUE);
    }
    below
}

/// The layering violations among `packages`, one line each.
pub(crate) fn violations(packages: &[Package]) -> Vec<String> {
    let mut found = Vec::new();
    for p in packages.iter().filter(|p| p.publish || p.name == TESTKIT) {
        let below = allowed_below(&p.name);
        for d in p.dependencies.iter().filter(|d| is_kcache(&d.name)) {
            let ok = d.name == p.name
                || below.contains(&d.name.as_str())
                || (d.kind == "dev" && d.name == APISERVER && p.name != APISERVER)
                || (d.kind == "dev" && d.name == TESTKIT);
            if !ok {
                found.push(format!(
                    "{} has a {} dependency on {}, which is not below it in the stack",
                    p.name, d.kind, d.name
                ));
            }
        }
    }
    found
}

/// Fails with every violation of the workspace.
pub(crate) fn check() -> Result<(), String> {
    let v = violations(&packages()?);
    if v.is_empty() {
        Ok(())
    } else {
        Err(v.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::Dependency;

    fn pkg(name: &str, deps: &[(&str, &str)]) -> Package {
        Package {
            name: name.into(),
            version: "0.1.0".into(),
            manifest: serde_json::Value::Null,
            dir: Default::default(),
            publish: true,
            dependencies: deps
                .iter()
                .map(|(n, k)| Dependency {
                    name: (*n).into(),
                    kind: (*k).into(),
                    req: "*".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn upward_dependency_is_a_violation() {
        let v = violations(&[pkg("kcache-store", &[("kcache-deltafifo", "normal")])]);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn downward_dependency_is_allowed() {
        let ps = [pkg(
            "kcache-informer",
            &[("kcache-store", "normal"), ("kcache-reflector", "normal")],
        )];
        assert!(violations(&ps).is_empty());
    }

    #[test]
    fn apiserver_only_as_dev_dependency() {
        assert!(violations(&[pkg("kcache-informer", &[("kcache-apiserver", "dev")])]).is_empty());
        assert_eq!(
            violations(&[pkg("kcache-informer", &[("kcache-apiserver", "normal")])]).len(),
            1
        );
    }

    #[test]
    fn apiserver_uses_store_and_reflector_only() {
        assert!(
            violations(&[pkg(
                APISERVER,
                &[("kcache-store", "normal"), ("kcache-reflector", "normal")]
            )])
            .is_empty()
        );
        assert_eq!(
            violations(&[pkg(APISERVER, &[("kcache-informer", "normal")])]).len(),
            1
        );
    }

    #[test]
    fn workqueue_stands_alone_and_serves_the_informer_and_above() {
        assert_eq!(
            violations(&[pkg(WORKQUEUE, &[("kcache-store", "normal")])]).len(),
            1
        );
        assert_eq!(
            violations(&[pkg("kcache-deltafifo", &[(WORKQUEUE, "normal")])]).len(),
            1
        );
        assert!(violations(&[pkg("kcache-informer", &[(WORKQUEUE, "normal")])]).is_empty());
        assert!(violations(&[pkg("kcache-factory", &[(WORKQUEUE, "normal")])]).is_empty());
    }

    #[test]
    fn leader_election_and_events_stand_alone_and_serve_the_facade() {
        for beside in [LEADERELECTION, EVENTS] {
            assert_eq!(
                violations(&[pkg(beside, &[("kcache-store", "normal")])]).len(),
                1
            );
            assert_eq!(
                violations(&[pkg("kcache-factory", &[(beside, "normal")])]).len(),
                1
            );
            assert!(violations(&[pkg(FACADE, &[(beside, "normal")])]).is_empty());
        }
    }

    #[test]
    fn facade_sits_on_every_layer_and_nothing_depends_on_it() {
        let layers: Vec<(&str, &str)> = STACK
            .iter()
            .chain([&WORKQUEUE])
            .map(|c| (*c, "normal"))
            .collect();
        assert!(violations(&[pkg(FACADE, &layers)]).is_empty());
        assert_eq!(
            violations(&[pkg(FACADE, &[(APISERVER, "normal")])]).len(),
            1
        );
        assert_eq!(
            violations(&[pkg("kcache-factory", &[(FACADE, "normal")])]).len(),
            1
        );
    }

    #[test]
    fn any_crate_tests_with_the_testkit_and_the_testkit_uses_no_kcache_crate() {
        for user in [
            WORKQUEUE,
            LEADERELECTION,
            EVENTS,
            "kcache-store",
            APISERVER,
            FACADE,
        ] {
            assert!(violations(&[pkg(user, &[(TESTKIT, "dev")])]).is_empty());
            assert_eq!(violations(&[pkg(user, &[(TESTKIT, "normal")])]).len(), 1);
        }
        let mut testkit = pkg(TESTKIT, &[("kcache-store", "normal")]);
        testkit.publish = false;
        assert_eq!(violations(&[testkit]).len(), 1);
    }

    #[test]
    fn workspace_respects_layering() {
        assert_eq!(check(), Ok(()));
    }
}
