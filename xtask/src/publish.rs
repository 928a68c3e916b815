//! The publish dry run: `cargo publish --workspace --dry-run`, after clearing what an earlier
//! dry run from the same checkout left behind.
//!
//! The dry run packs each crate into a local registry under `target/package/` and builds the
//! crates that depend on it from there. Cargo unpacks those crates into
//! `$CARGO_HOME/registry/src/<hash of that registry's path>/<name>-<version>` and, when that
//! folder is already there, builds from it as it is. A CI machine that keeps `$CARGO_HOME` and
//! clones to the same path every run would then verify today's crates against an earlier run's
//! sources of the crates they depend on (it did: `kcache-informer` failed against a
//! `kcache-reflector` from before `ReflectorConfig`). So the workspace's own unpacked crates are
//! removed first; cargo unpacks them again from the fresh packages.
//!
//! The builds of those unpacked crates go into the workspace's target directory, and cargo
//! takes a registry crate of the same name and version as unchanged (it checks no file times
//! for registry sources): a second dry run into the same target directory linked today's
//! `kcache-informer` against the previous run's build of `kcache-store`. So the fingerprints of
//! the workspace's crates are removed from the target directory too, and cargo builds them
//! again (those of the workspace's own checkout as well, which only costs a rebuild of its
//! crates by the next command).

use std::path::{Path, PathBuf};

use crate::cargo;
use crate::metadata::{packages, target_directory};
use crate::tools::Tools;

/// Runs the publish dry run of the whole workspace from freshly unpacked sources, with the
/// variables `tools` hands to cargo (protoc for etcd-client).
pub(crate) fn dry_run(tools: &Tools) -> Result<(), String> {
    let published: Vec<_> = packages()?.into_iter().filter(|p| p.publish).collect();
    let names: Vec<String> = published
        .iter()
        .map(|p| format!("{}-{}", p.name, p.version))
        .collect();
    if let Some(home) = cargo_home() {
        remove_unpacked(&home.join("registry").join("src"), &names)?;
    }
    let crates: Vec<&str> = published.iter().map(|p| p.name.as_str()).collect();
    remove_fingerprints(&target_directory()?, &crates)?;
    cargo(
        &["publish", "--workspace", "--dry-run", "--allow-dirty"],
        &tools.envs,
    )
}

/// `$CARGO_HOME`, or `~/.cargo` when it is not set.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|home| home.join(".cargo")))
}

/// Removes every `<source>/<name>` under `src` for the given `name-version` folder names.
fn remove_unpacked(src: &Path, names: &[String]) -> Result<(), String> {
    let Ok(sources) = std::fs::read_dir(src) else {
        return Ok(()); // nothing was ever unpacked
    };
    for source in sources.flatten() {
        for name in names {
            let unpacked = source.path().join(name);
            if unpacked.is_dir() {
                std::fs::remove_dir_all(&unpacked)
                    .map_err(|e| format!("removing {}: {e}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}

/// Removes the fingerprints of the given crates from every profile folder of `target` (each
/// `<profile>/.fingerprint/<crate>-<hash>`), so that cargo builds them again.
fn remove_fingerprints(target: &Path, crates: &[&str]) -> Result<(), String> {
    let Ok(profiles) = std::fs::read_dir(target) else {
        return Ok(()); // nothing was ever built
    };
    for profile in profiles.flatten() {
        let Ok(units) = std::fs::read_dir(profile.path().join(".fingerprint")) else {
            continue;
        };
        for unit in units.flatten() {
            let file_name = unit.file_name();
            let name = file_name.to_string_lossy();
            let of_crate = name
                .rsplit_once('-')
                .is_some_and(|(krate, _hash)| crates.contains(&krate));
            if of_crate {
                std::fs::remove_dir_all(unit.path())
                    .map_err(|e| format!("removing {}: {e}", unit.path().display()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_unpacked_workspace_crates_are_removed_and_others_kept() {
        let src = std::env::temp_dir().join(format!("xtask-publish-{}", std::process::id()));
        let overlay = src.join("-0123456789abcdef");
        let index = src.join("index.crates.io-1949cf8c6b5b557f");
        for dir in [
            overlay.join("kcache-store-0.1.0/src"),
            overlay.join("kcache-0.1.0"),
            index.join("serde-1.0.0"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let names = ["kcache-store-0.1.0".to_owned()];
        remove_unpacked(&src, &names).unwrap();
        assert!(!overlay.join("kcache-store-0.1.0").exists());
        assert!(overlay.join("kcache-0.1.0").exists());
        assert!(index.join("serde-1.0.0").exists());
        std::fs::remove_dir_all(&src).unwrap();
    }

    #[test]
    fn the_workspace_crates_fingerprints_are_removed_and_others_kept() {
        let target =
            std::env::temp_dir().join(format!("xtask-fingerprints-{}", std::process::id()));
        let fingerprints = target.join("debug/.fingerprint");
        for unit in [
            "kcache-store-0123abcd",
            "kcache-0a1b",
            "kcache-store-extra-99",
            "serde-77",
        ] {
            std::fs::create_dir_all(fingerprints.join(unit)).unwrap();
        }
        remove_fingerprints(&target, &["kcache-store", "kcache"]).unwrap();
        assert!(!fingerprints.join("kcache-store-0123abcd").exists());
        assert!(!fingerprints.join("kcache-0a1b").exists());
        assert!(fingerprints.join("kcache-store-extra-99").exists());
        assert!(fingerprints.join("serde-77").exists());
        std::fs::remove_dir_all(&target).unwrap();
    }

    #[test]
    fn a_missing_registry_folder_is_not_an_error() {
        let src = std::env::temp_dir().join("xtask-publish-no-such-folder");
        assert!(remove_unpacked(&src, &["kcache-0.1.0".to_owned()]).is_ok());
    }
}
