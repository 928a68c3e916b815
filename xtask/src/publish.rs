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

use std::path::{Path, PathBuf};

use crate::cargo;
use crate::metadata::packages;
use crate::tools::Tools;

/// Runs the publish dry run of the whole workspace from freshly unpacked sources, with the
/// variables `tools` hands to cargo (protoc for etcd-client).
pub(crate) fn dry_run(tools: &Tools) -> Result<(), String> {
    let names: Vec<String> = packages()?
        .iter()
        .filter(|p| p.publish)
        .map(|p| format!("{}-{}", p.name, p.version))
        .collect();
    if let Some(home) = cargo_home() {
        remove_unpacked(&home.join("registry").join("src"), &names)?;
    }
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
    fn a_missing_registry_folder_is_not_an_error() {
        let src = std::env::temp_dir().join("xtask-publish-no-such-folder");
        assert!(remove_unpacked(&src, &["kcache-0.1.0".to_owned()]).is_ok());
    }
}
