//! The layering invariant: store ← deltafifo ← reflector ← informer ← factory; apiserver uses
//! store and reflector; nothing published depends on apiserver except as a dev-dependency.

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

/// The kcache crates `crate_name` may depend on with normal (and build) dependencies.
fn allowed_below(crate_name: &str) -> Vec<&'static str> {
    if crate_name == APISERVER {
        return vec!["kcache-store", "kcache-reflector"];
    }
    match STACK.iter().position(|c| *c == crate_name) {
        Some(level) => STACK[..level].to_vec(),
        None => Vec::new(),
    }
}

/// The layering violations among `packages`, one line each.
pub(crate) fn violations(packages: &[Package]) -> Vec<String> {
    let mut found = Vec::new();
    for p in packages.iter().filter(|p| p.publish) {
        let below = allowed_below(&p.name);
        for d in p
            .dependencies
            .iter()
            .filter(|d| d.name.starts_with("kcache-"))
        {
            let ok = d.name == p.name
                || below.contains(&d.name.as_str())
                || (d.kind == "dev" && d.name == APISERVER && p.name != APISERVER);
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
    fn workspace_respects_layering() {
        assert_eq!(check(), Ok(()));
    }
}
