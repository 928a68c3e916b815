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
//! | `CARGO_FUZZ`       | the cargo-fuzz binary (`cargo fuzz` runs the one on the `PATH`) | the `fuzz` step (xtask/src/fuzz.rs) |
//! | `KCACHE_STRICT=1`  | (set by `--strict`) a test that would skip fails instead | every test that can skip            |
//! | `KCACHE_SKIP_LOG`  | the file each skip inside a test is recorded in          | `kcache_apiserver::skip`            |
//!
//! A variable already set is checked and kept. Otherwise: protoc is the one on the `PATH`, else
//! the binary the `protoc-bin-vendored` crate ships; kubectl and etcd are the ones on the `PATH`;
//! the Python client is `python3` on the `PATH` when it imports `kubernetes`, else a virtual
//! environment under `<target>/ci/python` that pip fills; the JavaScript client is installed by npm
//! under `<target>/ci/js`. What cannot be had becomes a [`Skip`] saying why and what enables it.
//!
//! Every test that cannot run for want of something goes through `kcache_apiserver::skip`, which
//! appends a line to `<target>/ci/skipped-tests.log` (`KCACHE_SKIP_LOG`); the closing summary
//! lists those lines beside the probes' skips, since a message printed inside a passing test is
//! captured by the test harness and never seen.

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
    "CARGO_FUZZ",
];

/// The JavaScript client npm installs (its 1.x API).
const JS_CLIENT: &str = "@kubernetes/client-node@1";

/// Where the tools are looked for, and where fetched clients go.
pub(crate) struct Host {
    /// The `PATH` searched, and given to the programs run here.
    path: OsString,
    /// The [`VARS`] that are set.
    vars: HashMap<&'static str, OsString>,
    /// The cargo target directory.
    target: PathBuf,
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
            target: target.to_owned(),
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
    RealClient {
        var: "CARGO_FUZZ",
        check: "fuzz targets",
        find: |host| binary(host, "CARGO_FUZZ", "cargo-fuzz", "cargo install cargo-fuzz"),
    },
];

/// What the steps get: variables for the cargo children, and the checks skipped.
#[derive(Debug, Default)]
pub(crate) struct Tools {
    /// Variables to set on every cargo child (see the module's table).
    pub(crate) envs: Vec<(&'static str, OsString)>,
    /// The checks that cannot run here.
    pub(crate) skips: Vec<Skip>,
    /// Where the tests record their own skips (`KCACHE_SKIP_LOG`).
    pub(crate) skip_log: PathBuf,
    /// The cargo target directory.
    pub(crate) target: PathBuf,
}

impl Tools {
    /// Finds protoc (an error when there is none: nothing builds without it) and every real
    /// client; `strict` adds `KCACHE_STRICT=1` for the tests.
    pub(crate) fn find(host: &Host, strict: bool) -> Result<Self, String> {
        let mut tools = Self {
            skip_log: host.cache.join("skipped-tests.log"),
            target: host.target.clone(),
            ..Self::default()
        };
        tools.envs.push(("PROTOC", protoc(host)?));
        tools
            .envs
            .push(("KCACHE_SKIP_LOG", tools.skip_log.clone().into()));
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

    /// Empties the tests' skip log, so that it holds this run's skips only.
    pub(crate) fn clear_skip_log(&self) -> Result<(), String> {
        match std::fs::remove_file(&self.skip_log) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("removing {}: {e}", self.skip_log.display()))
            }
            _ => Ok(()),
        }
    }

    /// The skips the tests recorded, each distinct line once with how many tests it skipped.
    fn test_skips(&self) -> Vec<(String, usize)> {
        let log = std::fs::read_to_string(&self.skip_log).unwrap_or_default();
        let mut counted: Vec<(String, usize)> = Vec::new();
        for line in log.lines().filter(|l| !l.trim().is_empty()) {
            match counted.iter_mut().find(|(seen, _)| seen == line) {
                Some((_, n)) => *n += 1,
                None => counted.push((line.to_owned(), 1)),
            }
        }
        counted
    }

    /// The summary `cargo xtask ci` prints before and after the steps: each check skipped for
    /// want of a tool, with why and what enables it, and each skip the tests recorded, or that
    /// nothing was skipped.
    pub(crate) fn summary(&self) -> String {
        let test_skips = self.test_skips();
        if self.skips.is_empty() && test_skips.is_empty() {
            return "xtask ci: nothing skipped\n".to_owned();
        }
        let mut out = String::new();
        if !self.skips.is_empty() {
            out += &format!(
                "xtask ci: {} check(s) skipped (`--strict` makes this a failure):\n{}",
                self.skips.len(),
                self.skip_report()
            );
        }
        if !test_skips.is_empty() {
            let tests: usize = test_skips.iter().map(|(_, n)| n).sum();
            out +=
                &format!("xtask ci: {tests} test(s) skipped (`--strict` makes this a failure):\n");
            for (line, n) in test_skips {
                out += &format!("  SKIPPED {line} ({n} test(s))\n");
            }
        }
        out
    }

    /// Whether `var` is handed to the tests (its tool was found).
    pub(crate) fn has(&self, var: &str) -> bool {
        self.envs.iter().any(|(v, _)| *v == var)
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
mod tests;
