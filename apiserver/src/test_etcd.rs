//! [`TestEtcd`]: a real etcd started on a free loopback port with a temporary data directory,
//! for tests and benchmarks of [`EtcdStorage`](crate::EtcdStorage).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::storage::{EtcdConfig, EtcdStorage, StorageError};

/// The log line etcd prints once it serves clients.
const READY: &str = "ready to serve client requests";

/// How long etcd may take to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A real etcd process for tests: a single member listening on free `127.0.0.1` ports with its
/// data in a temporary directory. Killed, and its directory removed, when dropped.
///
/// The binary is `$ETCD`, else `etcd` on the `PATH` (Debian's `etcd-server` puts it in
/// `/usr/bin`), as `cargo xtask ci` finds it; [`TestEtcd::start`] answers `Ok(None)` when there
/// is none, so that tests can skip.
/// etcd is started with a 100 ms `--experimental-watch-progress-notify-interval`, so that
/// watches get progress notifications quickly.
#[derive(Debug)]
pub struct TestEtcd {
    binary: PathBuf,
    data_dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// The etcd binary to run, if any.
pub(crate) fn find_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ETCD") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("etcd"))
            .find(|candidate| candidate.is_file())
    })
}

/// A port free on `127.0.0.1` now.
pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

impl TestEtcd {
    /// Starts etcd and waits until it serves clients; `Ok(None)` when no etcd binary exists.
    pub async fn start() -> std::io::Result<Option<Self>> {
        let Some(binary) = find_binary() else {
            return Ok(None);
        };
        let data_dir = std::env::temp_dir().join(format!(
            "kcache-etcd-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let mut etcd = Self {
            binary,
            data_dir,
            client_port: 0,
            peer_port: 0,
            child: None,
        };
        // A port found free may be taken by another process before etcd binds it: then etcd
        // exits, and another pair of ports is tried.
        let mut attempts = 3;
        loop {
            etcd.client_port = free_port()?;
            etcd.peer_port = free_port()?;
            match etcd.restart().await {
                Ok(()) => return Ok(Some(etcd)),
                Err(e) if attempts > 1 && e.kind() == std::io::ErrorKind::AddrInUse => {
                    attempts -= 1;
                    let _ = std::fs::remove_dir_all(&etcd.data_dir);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The storage configuration for this etcd.
    pub fn config(&self) -> EtcdConfig {
        EtcdConfig::new([self.url()])
    }

    /// Connects a new [`EtcdStorage`] to this etcd.
    pub async fn storage(&self) -> Result<EtcdStorage, StorageError> {
        EtcdStorage::connect(self.config()).await
    }

    /// Kills etcd at once (SIGKILL), keeping its data: clients see the connection break.
    pub async fn kill(&mut self) -> std::io::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await?;
        }
        Ok(())
    }

    /// Starts etcd again (after [`TestEtcd::kill`]) on the same ports and data, and waits
    /// until it serves clients.
    pub async fn restart(&mut self) -> std::io::Result<()> {
        self.kill().await?;
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut child = Command::new(&self.binary)
            .arg("--name=kcache-test")
            .arg(format!("--data-dir={}", self.data_dir.display()))
            .arg(format!("--listen-client-urls={}", self.url()))
            .arg(format!("--advertise-client-urls={}", self.url()))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=kcache-test={peer}"))
            .arg("--experimental-watch-progress-notify-interval=100ms")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("etcd's stderr is not piped"))?;
        self.child = Some(child);
        let mut lines = BufReader::new(stderr).lines();
        let mut last = String::new();
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if line.contains(READY) {
                    return Ok(true);
                }
                last = line;
            }
            Ok::<_, std::io::Error>(false)
        })
        .await;
        match ready {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => {
                let kind = if last.contains("address already in use") {
                    std::io::ErrorKind::AddrInUse
                } else {
                    std::io::ErrorKind::Other
                };
                return Err(std::io::Error::new(
                    kind,
                    format!("etcd exited before it was ready: {last}"),
                ));
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(std::io::Error::other("etcd was not ready within 30 s")),
        }
        // Keep reading etcd's log so that it never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "etcd", "{line}");
            }
        });
        Ok(())
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}
