//! [`TestEtcdCluster`]: three real etcd members on loopback ports, for tests of
//! [`EtcdStorage`](crate::EtcdStorage) under the faults an operator meets: a member killed,
//! stopped, wiped and re-joined.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use etcd_client::Client;
use tokio::time::Instant;

use crate::storage::{EtcdConfig, EtcdStorage, StorageError};
use crate::test_etcd::{find_binary, free_port};

/// How long a member may take to serve clients with a leader.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a status request to a member may take.
const STATUS_TIMEOUT: Duration = Duration::from_secs(1);

/// One member of a [`TestEtcdCluster`].
#[derive(Debug)]
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// etcd's member id (changes when the member is re-added).
    id: u64,
    child: Option<Child>,
    paused: bool,
}

impl Member {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }
}

/// Three etcd members on free `127.0.0.1` ports, each with its data in a temporary directory;
/// all killed, and the directories removed, when dropped.
///
/// The binary is found as [`TestEtcd`](crate::TestEtcd)'s (`$ETCD`, else `etcd` on the
/// `PATH`); [`TestEtcdCluster::start`] answers `Ok(None)` when there is none. Members run with
/// etcd's default heartbeat (100 ms) and election timeout (1 s), and a 100 ms
/// `--experimental-watch-progress-notify-interval`. Their logs go to files in the cluster's
/// directory. The processes are `std` children, so the cluster can outlive the Tokio runtime
/// that started it.
#[derive(Debug)]
pub struct TestEtcdCluster {
    binary: PathBuf,
    dir: PathBuf,
    token: String,
    members: Vec<Member>,
}

/// The status of the member at `url`, within [`STATUS_TIMEOUT`].
async fn status(url: &str) -> Result<etcd_client::StatusResponse, String> {
    let mut client = Client::connect([url], None)
        .await
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(STATUS_TIMEOUT, client.status()).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no status from {url} within {STATUS_TIMEOUT:?}")),
    }
}

fn signal(child: &Child, signal: &str) -> std::io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "kill -{signal} failed: {status}"
        )))
    }
}

impl TestEtcdCluster {
    /// Starts three members and waits until each serves clients and knows a leader; `Ok(None)`
    /// when no etcd binary exists.
    pub async fn start() -> std::io::Result<Option<Self>> {
        let Some(binary) = find_binary() else {
            return Ok(None);
        };
        let token = uuid::Uuid::new_v4().to_string();
        let dir = std::env::temp_dir().join(format!("kcache-etcd-cluster-{token}"));
        std::fs::create_dir_all(&dir)?;
        let mut members = Vec::new();
        for i in 0..3 {
            members.push(Member {
                name: format!("m{i}"),
                client_port: free_port()?,
                peer_port: free_port()?,
                id: 0,
                child: None,
                paused: false,
            });
        }
        let mut cluster = Self {
            binary,
            dir,
            token,
            members,
        };
        for i in 0..cluster.members.len() {
            cluster.spawn(i, "new")?;
        }
        for i in 0..cluster.members.len() {
            cluster.wait_ready(i).await?;
        }
        Ok(Some(cluster))
    }

    /// How many members the cluster has.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the cluster has no members (never: it has three).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The client URL of member `i`.
    pub fn url(&self, i: usize) -> String {
        self.members.get(i).map(Member::url).unwrap_or_default()
    }

    /// Every member's client URL.
    pub fn urls(&self) -> Vec<String> {
        self.members.iter().map(Member::url).collect()
    }

    /// The storage configuration for the whole cluster.
    pub fn config(&self) -> EtcdConfig {
        EtcdConfig::new(self.urls())
    }

    /// Connects a new [`EtcdStorage`] to every member.
    pub async fn storage(&self) -> Result<EtcdStorage, StorageError> {
        EtcdStorage::connect(self.config()).await
    }

    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{i}.data"))
    }

    fn log_path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{i}.log"))
    }

    fn member(&mut self, i: usize) -> std::io::Result<&mut Member> {
        self.members
            .get_mut(i)
            .ok_or_else(|| std::io::Error::other(format!("no etcd member {i}")))
    }

    fn spawn(&mut self, i: usize, state: &str) -> std::io::Result<()> {
        let initial_cluster = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let data_dir = self.data_dir(i);
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path(i))?;
        let (binary, token) = (self.binary.clone(), self.token.clone());
        let member = self.member(i)?;
        let child = Command::new(binary)
            .arg(format!("--name={}", member.name))
            .arg(format!("--data-dir={}", data_dir.display()))
            .arg(format!("--listen-client-urls={}", member.url()))
            .arg(format!("--advertise-client-urls={}", member.url()))
            .arg(format!("--listen-peer-urls={}", member.peer_url()))
            .arg(format!(
                "--initial-advertise-peer-urls={}",
                member.peer_url()
            ))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg(format!("--initial-cluster-state={state}"))
            .arg(format!("--initial-cluster-token={token}"))
            .arg("--experimental-watch-progress-notify-interval=100ms")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        member.child = Some(child);
        member.paused = false;
        Ok(())
    }

    /// The last lines of member `i`'s log.
    fn log_tail(&self, i: usize) -> String {
        let log = std::fs::read_to_string(self.log_path(i)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }

    /// Waits until member `i` answers its status with a leader, and records its id.
    async fn wait_ready(&mut self, i: usize) -> std::io::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let url = self.url(i);
        loop {
            let member = self.member(i)?;
            if let Some(child) = member.child.as_mut()
                && let Some(exit) = child.try_wait()?
            {
                member.child = None;
                let tail = self.log_tail(i);
                let kind = if tail.contains("address already in use") {
                    std::io::ErrorKind::AddrInUse
                } else {
                    std::io::ErrorKind::Other
                };
                return Err(std::io::Error::new(
                    kind,
                    format!("etcd member {i} exited ({exit}): {tail}"),
                ));
            }
            match status(&url).await {
                Ok(s) if s.leader() != 0 => {
                    self.member(i)?.id = s.header().map_or(0, |h| h.member_id());
                    return Ok(());
                }
                Ok(_) => tracing::debug!(member = i, "etcd member has no leader yet"),
                Err(e) => tracing::debug!(member = i, error = %e, "etcd member not ready"),
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::other(format!(
                    "etcd member {i} not ready within {READY_TIMEOUT:?}: {}",
                    self.log_tail(i)
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The index of the current leader, as the running members see it; waits (bounded) while
    /// they elect one.
    pub async fn leader(&self) -> std::io::Result<usize> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            for member in self
                .members
                .iter()
                .filter(|m| m.child.is_some() && !m.paused)
            {
                if let Ok(s) = status(&member.url()).await
                    && let Some(i) = self.members.iter().position(|m| m.id == s.leader())
                {
                    return Ok(i);
                }
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::other("no etcd leader elected"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A member other than the leader.
    pub async fn follower(&self) -> std::io::Result<usize> {
        let leader = self.leader().await?;
        Ok((leader + 1) % self.members.len())
    }

    /// Kills member `i` at once (SIGKILL), keeping its data.
    pub fn kill(&mut self, i: usize) -> std::io::Result<()> {
        let member = self.member(i)?;
        if let Some(mut child) = member.child.take() {
            child.kill()?;
            child.wait()?;
        }
        member.paused = false;
        Ok(())
    }

    /// Starts member `i` again on its ports and data, and waits until it serves clients.
    pub async fn restart(&mut self, i: usize) -> std::io::Result<()> {
        self.kill(i)?;
        self.spawn(i, "existing")?;
        self.wait_ready(i).await
    }

    /// Stops member `i` (SIGSTOP): its connections stay open but it answers nothing.
    pub fn pause(&mut self, i: usize) -> std::io::Result<()> {
        let member = self.member(i)?;
        if let Some(child) = member.child.as_ref() {
            signal(child, "STOP")?;
            member.paused = true;
        }
        Ok(())
    }

    /// Resumes member `i` (SIGCONT) after [`TestEtcdCluster::pause`].
    pub fn resume(&mut self, i: usize) -> std::io::Result<()> {
        let member = self.member(i)?;
        if let Some(child) = member.child.as_ref() {
            signal(child, "CONT")?;
            member.paused = false;
        }
        Ok(())
    }

    /// Kills member `i`, removes it from the cluster, wipes its data, adds it again and starts
    /// it empty: it re-joins and receives the data from the others.
    pub async fn wipe_and_rejoin(&mut self, i: usize) -> std::io::Result<()> {
        let other = (i + 1) % self.members.len();
        let id = self.member(i)?.id;
        let peer = self.member(i)?.peer_url();
        self.kill(i)?;
        let mut client = Client::connect([self.url(other)], None)
            .await
            .map_err(std::io::Error::other)?;
        // etcd refuses reconfiguration ("unhealthy cluster") until the members left have been
        // connected for a while (its strict reconfiguration check): ask again, bounded.
        let deadline = Instant::now() + READY_TIMEOUT;
        while let Err(e) = client.member_remove(id).await {
            if Instant::now() >= deadline {
                return Err(std::io::Error::other(e));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        remove_dir(&self.data_dir(i))?;
        while let Err(e) = client.member_add([peer.clone()], None).await {
            if Instant::now() >= deadline {
                return Err(std::io::Error::other(e));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.spawn(i, "existing")?;
        self.wait_ready(i).await
    }

    /// Defragments every running member.
    pub async fn defragment(&self) -> std::io::Result<()> {
        for member in self.members.iter().filter(|m| m.child.is_some()) {
            let mut client = Client::connect([member.url()], None)
                .await
                .map_err(std::io::Error::other)?;
            client.defragment().await.map_err(std::io::Error::other)?;
        }
        Ok(())
    }

    /// Brings every member back (resumes the stopped, restarts the killed) and waits until all
    /// serve clients with a leader.
    pub async fn heal(&mut self) -> std::io::Result<()> {
        for i in 0..self.members.len() {
            if self.member(i)?.paused {
                self.resume(i)?;
            }
            if self.member(i)?.child.is_none() {
                self.spawn(i, "existing")?;
            }
        }
        for i in 0..self.members.len() {
            self.wait_ready(i).await?;
        }
        Ok(())
    }
}

fn remove_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

impl Drop for TestEtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            if let Some(mut child) = member.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
