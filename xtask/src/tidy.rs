//! Tidy rules, run as tests: every published crate carries its publishing metadata, a README,
//! tests and benches; every source file opens with a `//!` comment; internal dependencies are
//! versioned exactly where cargo needs it; no crate's modules import each other in a circle
//! (imports.rs); no source file is over 600 lines.

use std::fs;
use std::path::Path;

use crate::imports::{circles, graph_of};
use crate::metadata::{Package, packages};

fn published() -> Vec<Package> {
    match packages() {
        Ok(p) => p.into_iter().filter(|p| p.publish).collect(),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn published_crates_have_metadata() {
    let mut missing = Vec::new();
    for p in published() {
        for field in [
            "description",
            "license",
            "repository",
            "readme",
            "rust_version",
        ] {
            if p.manifest[field].as_str().is_none_or(str::is_empty) {
                missing.push(format!("{}: {field}", p.name));
            }
        }
        for field in ["keywords", "categories"] {
            if p.manifest[field].as_array().is_none_or(Vec::is_empty) {
                missing.push(format!("{}: {field}", p.name));
            }
        }
    }
    assert!(missing.is_empty(), "missing package metadata: {missing:#?}");
}

#[test]
fn published_crates_have_readme_tests_and_benches() {
    let mut missing = Vec::new();
    for p in published() {
        for entry in ["README.md", "tests", "benches", "src/lib.rs"] {
            // The `kcache` facade only re-exports the layers; leader election's and the events
            // recorder's cost is their API requests: nothing of their own to measure.
            let unmeasured = ["kcache", "kcache-leaderelection", "kcache-events"];
            if unmeasured.contains(&p.name.as_str()) && entry == "benches" {
                continue;
            }
            if !p.dir.join(entry).exists() {
                missing.push(format!("{}: {entry}", p.name));
            }
        }
    }
    assert!(missing.is_empty(), "missing files: {missing:#?}");
}

#[test]
fn internal_normal_dependencies_carry_a_version_dev_dependencies_do_not() {
    let mut wrong = Vec::new();
    for p in published() {
        for d in p
            .dependencies
            .iter()
            .filter(|d| d.name.starts_with("kcache-"))
        {
            let versioned = d.req != "*";
            match d.kind.as_str() {
                "dev" if versioned => wrong.push(format!(
                    "{} dev-depends on {} with a version",
                    p.name, d.name
                )),
                "dev" => {}
                _ if !versioned => wrong.push(format!(
                    "{} depends on {} without a version",
                    p.name, d.name
                )),
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_source_file_starts_with_a_module_comment() {
    let mut files = Vec::new();
    for p in packages().unwrap_or_default() {
        rust_files(&p.dir.join("src"), &mut files);
    }
    assert!(!files.is_empty());
    let undocumented: Vec<_> = files
        .iter()
        .filter(|f| {
            !fs::read_to_string(f)
                .unwrap_or_default()
                .trim_start()
                .starts_with("//!")
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "files without a leading //! comment: {undocumented:#?}"
    );
}

/// The longest a source file may be.
const MAX_LINES: usize = 600;

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut found = Vec::new();
    for p in packages().unwrap_or_default() {
        for circle in circles(&graph_of(&p.dir.join("src"))) {
            found.push(format!("{}: {}", p.name, circle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut files = Vec::new();
    for p in packages().unwrap_or_default() {
        for dir in ["src", "tests", "benches", "examples"] {
            rust_files(&p.dir.join(dir), &mut files);
        }
    }
    assert!(!files.is_empty());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = fs::read_to_string(f).unwrap_or_default().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
}
