//! Reading the workspace's packages from `cargo metadata`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::cargo_program;

/// A dependency of a workspace package on another package.
pub(crate) struct Dependency {
    pub(crate) name: String,
    /// `normal`, `dev` or `build`.
    pub(crate) kind: String,
    /// The version requirement; `*` when only a path is given.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tidy tests"))]
    pub(crate) req: String,
}

/// A package of the workspace.
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) version: String,
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tidy tests"))]
    pub(crate) manifest: Value,
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tidy tests"))]
    pub(crate) dir: PathBuf,
    pub(crate) publish: bool,
    pub(crate) dependencies: Vec<Dependency>,
}

/// `cargo metadata --no-deps` as JSON.
fn metadata() -> Result<Value, String> {
    let out = Command::new(cargo_program())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata output: {e}"))
}

/// The workspace's packages, from `cargo metadata --no-deps`.
pub(crate) fn packages() -> Result<Vec<Package>, String> {
    let meta = metadata()?;
    let packages = meta["packages"]
        .as_array()
        .ok_or("cargo metadata: no packages")?;
    Ok(packages.iter().map(package).collect())
}

/// The target directory cargo builds into (`CARGO_TARGET_DIR`, config, or `target/`).
pub(crate) fn target_directory() -> Result<PathBuf, String> {
    metadata()?["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata: no target_directory".to_owned())
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn package(p: &Value) -> Package {
    let manifest_path = PathBuf::from(text(&p["manifest_path"]));
    let dependencies = p["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| Dependency {
            name: text(&d["name"]),
            kind: d["kind"].as_str().unwrap_or("normal").to_owned(),
            req: text(&d["req"]),
        })
        .collect();
    Package {
        name: text(&p["name"]),
        version: text(&p["version"]),
        dir: manifest_path
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default(),
        // `publish: []` means never published.
        publish: !p["publish"].as_array().is_some_and(Vec::is_empty),
        manifest: p.clone(),
        dependencies,
    }
}
