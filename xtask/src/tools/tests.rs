//! Tests of the tool probes and of the skip summary, on fake hosts.

use super::*;

/// A host whose `PATH` is a new, empty folder holding the given fake executables.
fn fake_host(name: &str, executables: &[&str]) -> (Host, PathBuf) {
    let root = std::env::temp_dir().join(format!("xtask-tools-{name}-{}", std::process::id()));
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for exe in executables {
        let file = bin.join(exe);
        std::fs::write(&file, "#!/bin/sh\nexit 0\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let host = Host {
        path: bin.into_os_string(),
        vars: HashMap::new(),
        target: root.join("target"),
        cache: root.join("target/ci"),
    };
    (host, root)
}

fn checks(tools: &Tools) -> Vec<&str> {
    tools.skips.iter().map(|s| s.check).collect()
}

#[test]
fn a_path_without_real_clients_skips_their_tests_and_strict_fails() {
    let (host, root) = fake_host("bare", &[]);
    let tools = Tools::find(&host, false).unwrap();
    assert_eq!(
        checks(&tools),
        [
            "kubectl tests",
            "etcd storage tests",
            "Python client test",
            "JavaScript client test",
            "fuzz targets"
        ]
    );
    let report = tools.summary();
    assert!(report.contains("5 check(s) skipped"), "{report}");
    assert!(report.contains("no kubectl on the PATH"), "{report}");
    assert!(
        report.contains("apt-get install kubernetes-client"),
        "{report}"
    );
    assert!(report.contains("apt-get install etcd-server"), "{report}");
    assert!(tools.check_strict(false).is_ok());
    let strict = Tools::find(&host, true).unwrap();
    let err = strict.check_strict(true).unwrap_err();
    assert!(err.contains("5 check(s) would be skipped"), "{err}");
    assert!(strict.envs.contains(&("KCACHE_STRICT", "1".into())));
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn real_clients_found_are_handed_to_the_tests_and_nothing_is_skipped() {
    // The fake python3 exits 0, so it "imports kubernetes".
    let (mut host, root) = fake_host(
        "found",
        &["kubectl", "etcd", "protoc", "python3", "node", "cargo-fuzz"],
    );
    let js = root.join("js");
    std::fs::create_dir_all(js.join("node_modules/@kubernetes/client-node")).unwrap();
    std::fs::write(
        js.join("node_modules/@kubernetes/client-node/package.json"),
        "{}",
    )
    .unwrap();
    host.vars.insert("KCACHE_JS_CLIENT", js.clone().into());
    let tools = Tools::find(&host, true).unwrap();
    assert_eq!(tools.summary(), "xtask ci: nothing skipped\n");
    assert!(tools.check_strict(true).is_ok());
    let bin = root.join("bin");
    for (var, path) in [
        ("PROTOC", bin.join("protoc")),
        ("KUBECTL", bin.join("kubectl")),
        ("ETCD", bin.join("etcd")),
        ("KCACHE_PYTHON", bin.join("python3")),
        ("KCACHE_JS_CLIENT", js),
        ("CARGO_FUZZ", bin.join("cargo-fuzz")),
    ] {
        assert!(
            tools.envs.contains(&(var, path.into())),
            "{var}: {:?}",
            tools.envs
        );
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn protoc_comes_from_the_vendored_crate_when_none_is_on_the_path() {
    let (host, root) = fake_host("protoc", &[]);
    let protoc = protoc(&host).unwrap();
    assert!(Path::new(&protoc).is_file(), "{protoc:?}");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn skips_recorded_by_tests_are_listed_in_the_summary_once_each_with_a_count() {
    let (host, root) = fake_host("logged", &[]);
    let tools = Tools::find(&host, false).unwrap();
    assert!(
        tools
            .envs
            .contains(&("KCACHE_SKIP_LOG", tools.skip_log.clone().into()))
    );
    std::fs::create_dir_all(tools.skip_log.parent().unwrap()).unwrap();
    std::fs::write(
        &tools.skip_log,
        "etcd storage test: no etcd binary\nJavaScript client test: no node\n\
         etcd storage test: no etcd binary\n",
    )
    .unwrap();
    let report = tools.summary();
    assert!(report.contains("3 test(s) skipped"), "{report}");
    assert!(
        report.contains("  SKIPPED etcd storage test: no etcd binary (2 test(s))\n"),
        "{report}"
    );
    assert!(
        report.contains("  SKIPPED JavaScript client test: no node (1 test(s))\n"),
        "{report}"
    );
    tools.clear_skip_log().unwrap();
    assert!(!report.contains("nothing skipped"), "{report}");
    assert!(!tools.summary().contains("test(s) skipped"));
    tools.clear_skip_log().unwrap();
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_variable_naming_no_file_is_a_skip_that_says_so() {
    let (mut host, root) = fake_host("var", &["kubectl"]);
    host.vars.insert("KUBECTL", root.join("nowhere").into());
    let tools = Tools::find(&host, false).unwrap();
    assert_eq!(tools.skips[0].check, "kubectl tests");
    assert!(
        tools.skips[0].why.contains("is not a file"),
        "{:?}",
        tools.skips[0]
    );
    std::fs::remove_dir_all(root).unwrap();
}
