//! What the checks need from outside Rust, found (or fetched without a system package manager)
//! before any step runs, and the checks that must be skipped because something could not be had.
//!
//! # The contract with the tests
//!
//! `cargo xtask ci` probes up front and hands what it found to its cargo children as environment
//! variables; the tests read only these (their side is `apiserver/tests/apiserver/support.rs`):
//!
//! | variable           | what it names                                            | who reads it                        |
//! |--------------------|----------------------------------------------------------|-------------------------------------|
//! | `PROTOC`           | a protoc binary                                          | etcd-client's build script          |
//! | `KUBECTL`          | a kubectl binary                                         | the kubectl tests                   |
//! | `ETCD`             | an etcd binary                                           | `TestEtcd` (the etcd storage tests) |
//! | `KCACHE_PYTHON`    | a Python interpreter that imports `kubernetes`           | the Python client test              |
//! | `KCACHE_JS_CLIENT` | a folder whose `node_modules` holds `@kubernetes/client-node` (`node` is on the `PATH`) | the JavaScript client test |
//! | `KCACHE_STRICT=1`  | (set by `--strict`) a test that would skip fails instead | every test that can skip            |
//!
//! A variable already set is checked and kept. Otherwise: protoc is the one on the `PATH`, else
//! the binary the `protoc-bin-vendored` crate ships; kubectl and etcd are the ones on the `PATH`;
//! the Python client is `python3` on the `PATH` when it imports `kubernetes`, else a virtual
//! environment under `<target>/ci/python` that pip fills; the JavaScript client is installed by npm
//! under `<target>/ci/js`. What cannot be had becomes a [`Skip`] saying why and what enables it.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The variables a user may set to choose a tool.
const VARS: &[&str] = &[
    "PROTOC",
    "KUBECTL",
    "ETCD",
    "KCACHE_PYTHON",
    "KCACHE_JS_CLIENT",
];

/// The JavaScript client npm installs (its 1.x API).
const JS_CLIENT: &str = "@kubernetes/client-node@1";

/// Where the tools are looked for, and where fetched clients go.
pub(crate) struct Host {
    /// The `PATH` searched, and given to the programs run here.
    path: OsString,
    /// The [`VARS`] that are set.
    vars: HashMap<&'static str, OsString>,
    /// Where the fetched clients are kept (`<target>/ci`).
    cache: PathBuf,
}

impl Host {
    /// This process's `PATH` and variables, keeping fetched clients under `target`'s `ci/`.
    pub(crate) fn from_env(target: &Path) -> Self {
        let vars = VARS
            .iter()
            .filter_map(|&var| std::env::var_os(var).map(|value| (var, value)))
            .collect();
        Self {
            path: std::env::var_os("PATH").unwrap_or_default(),
            vars,
            cache: target.join("ci"),
        }
    }

    /// The first executable file `name` on the `PATH`.
    fn which(&self, name: &str) -> Option<PathBuf> {
        let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
        std::env::split_paths(&self.path)
            .map(|dir| dir.join(&file))
            .find(|candidate| is_executable(candidate))
    }

    /// Runs `program` with `args` and this host's `PATH`, capturing its output.
    fn run<I, S>(&self, program: &Path, args: I) -> Result<Output, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Command::new(program)
            .args(args)
            .env("PATH", &self.path)
            .output()
            .map_err(|e| format!("could not run {}: {e}", program.display()))
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// A check that cannot run here.
#[derive(Debug)]
pub(crate) struct Skip {
    /// The tests skipped.
    pub(crate) check: &'static str,
    /// Why.
    pub(crate) why: String,
    /// The command that enables them.
    pub(crate) enable: &'static str,
}

/// Why a real client cannot be had, and what would give it.
struct Missing {
    why: String,
    enable: &'static str,
}

impl Missing {
    fn new(why: impl Into<String>, enable: &'static str) -> Self {
        Self {
            why: why.into(),
            enable,
        }
    }
}

/// A real client or server some tests run: the variable that hands it over, the tests that
/// need it, and how it is found.
struct RealClient {
    var: &'static str,
    check: &'static str,
    find: fn(&Host) -> Result<OsString, Missing>,
}

const REAL_CLIENTS: &[RealClient] = &[
    RealClient {
        var: "KUBECTL",
        check: "kubectl tests",
        find: |host| {
            binary(
                host,
                "KUBECTL",
                "kubectl",
                "apt-get install kubernetes-client",
            )
        },
    },
    RealClient {
        var: "ETCD",
        check: "etcd storage tests",
        find: |host| binary(host, "ETCD", "etcd", "apt-get install etcd-server"),
    },
    RealClient {
        var: "KCACHE_PYTHON",
        check: "Python client test",
        find: python,
    },
    RealClient {
        var: "KCACHE_JS_CLIENT",
        check: "JavaScript client test",
        find: js_client,
    },
];

/// What the steps get: variables for the cargo children, and the checks skipped.
#[derive(Debug, Default)]
pub(crate) struct Tools {
    /// Variables to set on every cargo child (see the module's table).
    pub(crate) envs: Vec<(&'static str, OsString)>,
    /// The checks that cannot run here.
    pub(crate) skips: Vec<Skip>,
}

impl Tools {
    /// Finds protoc (an error when there is none: nothing builds without it) and every real
    /// client; `strict` adds `KCACHE_STRICT=1` for the tests.
    pub(crate) fn find(host: &Host, strict: bool) -> Result<Self, String> {
        let mut tools = Self::default();
        tools.envs.push(("PROTOC", protoc(host)?));
        for client in REAL_CLIENTS {
            match (client.find)(host) {
                Ok(value) => tools.envs.push((client.var, value)),
                Err(missing) => tools.skips.push(Skip {
                    check: client.check,
                    why: missing.why,
                    enable: missing.enable,
                }),
            }
        }
        if strict {
            tools.envs.push(("KCACHE_STRICT", "1".into()));
        }
        Ok(tools)
    }

    /// The skip list, one check a line (empty when nothing is skipped).
    fn skip_report(&self) -> String {
        self.skips
            .iter()
            .map(|s| {
                format!(
                    "  SKIPPED {}: {}; enable with `{}`\n",
                    s.check, s.why, s.enable
                )
            })
            .collect()
    }

    /// The summary `cargo xtask ci` prints before and after the steps: each skipped check with
    /// why and what enables it, or that nothing is skipped.
    pub(crate) fn summary(&self) -> String {
        if self.skips.is_empty() {
            return "xtask ci: nothing skipped\n".to_owned();
        }
        format!(
            "xtask ci: {} check(s) skipped (`--strict` makes this a failure):\n{}",
            self.skips.len(),
            self.skip_report()
        )
    }

    /// Under `--strict`, an error when any check would be skipped.
    pub(crate) fn check_strict(&self, strict: bool) -> Result<(), String> {
        if strict && !self.skips.is_empty() {
            return Err(format!(
                "--strict: {} check(s) would be skipped:\n{}",
                self.skips.len(),
                self.skip_report()
            ));
        }
        Ok(())
    }
}

/// `$PROTOC`, else protoc on the `PATH`, else the one `protoc-bin-vendored` ships.
pub(crate) fn protoc(host: &Host) -> Result<OsString, String> {
    if let Some(protoc) = host.vars.get("PROTOC") {
        return Ok(protoc.clone());
    }
    if let Some(protoc) = host.which("protoc") {
        return Ok(protoc.into());
    }
    protoc_bin_vendored::protoc_bin_path()
        .map(PathBuf::into_os_string)
        .map_err(|e| {
            format!(
                "no protoc on the PATH and none shipped for this platform ({e}): \
                 install it (`apt-get install protobuf-compiler`) or set PROTOC"
            )
        })
}

/// `$var`, when it is set: kept when `usable` accepts it, else a [`Missing`] saying it `fault`.
fn chosen(
    host: &Host,
    var: &str,
    usable: impl Fn(&Path) -> bool,
    fault: &str,
    enable: &'static str,
) -> Option<Result<OsString, Missing>> {
    let value = host.vars.get(var)?;
    Some(if usable(Path::new(value)) {
        Ok(value.clone())
    } else {
        Err(Missing::new(
            format!("{var}={} {fault}", value.to_string_lossy()),
            enable,
        ))
    })
}

/// `$var` when it names a file, else `name` on the `PATH`.
fn binary(host: &Host, var: &str, name: &str, enable: &'static str) -> Result<OsString, Missing> {
    if let Some(found) = chosen(host, var, Path::is_file, "is not a file", enable) {
        return found;
    }
    host.which(name)
        .map(PathBuf::into_os_string)
        .ok_or_else(|| Missing::new(format!("no {name} on the PATH (nor {var})"), enable))
}

/// The last non-empty line of a failed command's standard error.
fn last_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_owned()
}

/// Whether `python` imports the `kubernetes` package.
fn imports_kubernetes(host: &Host, python: &Path) -> bool {
    host.run(python, ["-c", "import kubernetes"])
        .is_ok_and(|out| out.status.success())
}

/// `$KCACHE_PYTHON`, else `python3` when it imports `kubernetes`, else the virtual environment
/// under `<target>/ci/python`, made and filled by pip when it lacks the client.
fn python(host: &Host) -> Result<OsString, Missing> {
    const PIP: &str = "pip install kubernetes (then set KCACHE_PYTHON)";
    let imports = |python: &Path| imports_kubernetes(host, python);
    if let Some(found) = chosen(
        host,
        "KCACHE_PYTHON",
        imports,
        "does not import kubernetes",
        PIP,
    ) {
        return found;
    }
    let python3 = host.which("python3").ok_or_else(|| {
        Missing::new(
            "no python3 on the PATH",
            "apt-get install python3 python3-venv",
        )
    })?;
    if imports_kubernetes(host, &python3) {
        return Ok(python3.into());
    }
    let venv = host.cache.join("python");
    let venv_python = venv.join("bin").join("python3");
    if imports_kubernetes(host, &venv_python) {
        return Ok(venv_python.into());
    }
    eprintln!(
        "xtask ci: installing the Python kubernetes client in {}",
        venv.display()
    );
    // Debian's python3 lacks ensurepip without python3-venv: `venv` then fails but leaves a
    // folder without pip, which `--clear` replaces on the next try.
    let made = host
        .run(
            &python3,
            [
                OsStr::new("-m"),
                "venv".as_ref(),
                "--clear".as_ref(),
                venv.as_os_str(),
            ],
        )
        .map_err(|e| Missing::new(e, "apt-get install python3-venv"))?;
    if !made.status.success() {
        return Err(Missing::new(
            format!("python3 -m venv failed: {}", last_error_line(&made)),
            "apt-get install python3-venv",
        ));
    }
    let pip = host
        .run(
            &venv_python,
            [
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "kubernetes",
            ],
        )
        .map_err(|e| Missing::new(e, PIP))?;
    if !pip.status.success() {
        return Err(Missing::new(
            format!(
                "pip could not install kubernetes: {}",
                last_error_line(&pip)
            ),
            PIP,
        ));
    }
    Ok(venv_python.into())
}

/// Whether `dir`'s `node_modules` holds the JavaScript client.
fn has_js_client(dir: &Path) -> bool {
    dir.join("node_modules/@kubernetes/client-node/package.json")
        .is_file()
}

/// `$KCACHE_JS_CLIENT`, else `<target>/ci/js`, where npm installs the client when it is not
/// there yet; `node` must be on the `PATH` to run it.
fn js_client(host: &Host) -> Result<OsString, Missing> {
    const NODE: &str = "apt-get install nodejs npm";
    if host.which("node").is_none() {
        return Err(Missing::new("no node on the PATH", NODE));
    }
    if let Some(found) = chosen(
        host,
        "KCACHE_JS_CLIENT",
        has_js_client,
        "has no node_modules/@kubernetes/client-node",
        "npm install --prefix \"$KCACHE_JS_CLIENT\" @kubernetes/client-node",
    ) {
        return found;
    }
    let dir = host.cache.join("js");
    if has_js_client(&dir) {
        return Ok(dir.into());
    }
    let npm = host
        .which("npm")
        .ok_or_else(|| Missing::new("no npm on the PATH", NODE))?;
    eprintln!("xtask ci: installing {JS_CLIENT} in {}", dir.display());
    let install_failed = |why: String| {
        Missing::new(
            why,
            "npm install @kubernetes/client-node (then set KCACHE_JS_CLIENT)",
        )
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| install_failed(format!("creating {}: {e}", dir.display())))?;
    let out = host
        .run(
            &npm,
            [
                OsStr::new("install"),
                "--prefix".as_ref(),
                dir.as_os_str(),
                "--no-audit".as_ref(),
                "--no-fund".as_ref(),
                "--silent".as_ref(),
                JS_CLIENT.as_ref(),
            ],
        )
        .map_err(install_failed)?;
    if !out.status.success() || !has_js_client(&dir) {
        return Err(install_failed(format!(
            "npm could not install {JS_CLIENT}: {}",
            last_error_line(&out)
        )));
    }
    Ok(dir.into())
}

#[cfg(test)]
mod tests {
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
                "JavaScript client test"
            ]
        );
        let report = tools.summary();
        assert!(report.contains("4 check(s) skipped"), "{report}");
        assert!(report.contains("no kubectl on the PATH"), "{report}");
        assert!(
            report.contains("apt-get install kubernetes-client"),
            "{report}"
        );
        assert!(report.contains("apt-get install etcd-server"), "{report}");
        assert!(tools.check_strict(false).is_ok());
        let strict = Tools::find(&host, true).unwrap();
        let err = strict.check_strict(true).unwrap_err();
        assert!(err.contains("4 check(s) would be skipped"), "{err}");
        assert!(strict.envs.contains(&("KCACHE_STRICT", "1".into())));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn real_clients_found_are_handed_to_the_tests_and_nothing_is_skipped() {
        // The fake python3 exits 0, so it "imports kubernetes".
        let (mut host, root) =
            fake_host("found", &["kubectl", "etcd", "protoc", "python3", "node"]);
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
}
