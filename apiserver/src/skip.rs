//! [`skip`]: the one way a test that needs a program from outside Rust (kubectl, etcd, the
//! Python or JavaScript client) says it cannot run here.
//!
//! `cargo xtask ci` finds those programs before the tests start and hands them over as
//! environment variables (xtask/src/tools.rs). Two more variables make a skip visible:
//!
//! - `KCACHE_STRICT=1` (`cargo xtask ci --strict`, as CI runs it): a skip fails the test, so that
//!   a green run cannot hide a real-client check that did not run;
//! - `KCACHE_SKIP_LOG`: a file each skip appends a line to, which xtask reads after the tests
//!   and lists in its closing summary (a message printed inside a passing test is captured by
//!   the test harness and never seen).

use std::io::Write;

/// The variable that turns a skip into a failure when it is `1`.
pub const STRICT_VAR: &str = "KCACHE_STRICT";

/// The variable naming the file every skip is recorded in, one `check: why` line each.
pub const SKIP_LOG_VAR: &str = "KCACHE_SKIP_LOG";

/// Skips the running test, which cannot run because of what `why` says (a program that is not
/// installed, a feature not built): records the skip, or fails the test under `KCACHE_STRICT=1`.
/// The caller returns after it.
///
/// `check` names what is not checked ("kubectl tests", "etcd storage test"); `why` says what
/// is missing and what would enable it.
///
/// # Panics
///
/// Under `KCACHE_STRICT=1`, always: that is how a strict run fails rather than skip.
#[allow(
    clippy::panic,
    reason = "a test helper: failing the calling test is what it does under KCACHE_STRICT=1"
)]
pub fn skip(check: &str, why: &str) {
    let line = format!("{check}: {why}");
    let strict = std::env::var_os(STRICT_VAR).is_some_and(|v| v == "1");
    if strict {
        panic!("{line} ({STRICT_VAR}=1 makes a skip a failure)");
    }
    tracing::warn!(check, why, "test skipped");
    // The test harness captures standard error; the log is what reaches `cargo xtask ci`.
    eprintln!("SKIPPED {line}");
    if let Some(log) = std::env::var_os(SKIP_LOG_VAR) {
        // One write of one line to a file opened for appending: lines from tests running in
        // parallel, in one process or several, do not interleave.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "could not record the skip in {}: {e}",
                std::path::Path::new(&log).display()
            );
        }
    }
}
