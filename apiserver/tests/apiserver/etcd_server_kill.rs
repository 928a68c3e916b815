//! One of two API servers on a three-member etcd cluster killed (SIGKILL of the binary) while
//! 8 writers (4 through each server) and watchers run: the surviving server's watchers see every
//! event with no gap, and a kcache reflector of the dead server's address relists or resumes
//! from the server restarted there and converges to the final state.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_apiserver::{EtcdConfig, EtcdStorage, TestServer, client_for};
use kcache_reflector::{KubeListerWatcher, Reflector, ReflectorConfig};
use kcache_store::{Indexer, Store};
use kube_client::{Api, Client};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::etcd_cluster::{cluster, config};
use crate::etcd_workload::{
    DEADLINE, OBJECTS, check_watch, check_writes, create_objects, final_state, object_name,
    revisions, wait_tokens, watcher, writer,
};
use crate::support::{client, test_builder};

/// The `kcache-apiserver` binary on the etcd cluster; SIGKILLed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts the binary on `listen` (`127.0.0.1:0`: a free port) with `config`'s endpoints
    /// and prefix.
    fn start(config: &EtcdConfig, listen: &str) -> Self {
        // KCACHE_APISERVER_BIN: a copy of the binary, where builds share a target directory.
        let binary = std::env::var_os("KCACHE_APISERVER_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_kcache-apiserver").into());
        let mut child = Command::new(binary)
            .args(["--listen", listen, "--etcd-servers"])
            .arg(config.endpoints.join(","))
            .args(["--etcd-prefix", &config.prefix])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let url = url.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Self { child, url }
    }

    fn client(&self) -> Client {
        client_for(&self.url, None, "default").unwrap()
    }

    /// SIGKILL: the process ends at once, in the middle of whatever it was doing.
    fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::mem::take(&mut self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Cms = Arc<Indexer<ConfigMap>>;

/// A kcache reflector of the ConfigMaps through `client`, until the token is cancelled.
fn reflect(client: Client) -> (Cms, CancellationToken) {
    let lw = KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, "default"));
    let store: Cms = Arc::new(Indexer::default());
    let reflector = Reflector::new(lw, Arc::clone(&store), ReflectorConfig::default());
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move { reflector.run(token).await });
    (store, stop)
}

/// An object's resourceVersion and data.
type Content = (Option<String>, Option<BTreeMap<String, String>>);

/// Each object's resourceVersion and data.
fn contents(objects: &[Arc<ConfigMap>]) -> BTreeMap<String, Content> {
    objects
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                (cm.metadata.resource_version.clone(), cm.data.clone()),
            )
        })
        .collect()
}

/// The binary SIGKILLed mid-stream, then started again at its address: no acknowledged write
/// is lost or doubled, the in-process server's watchers see every event with no gap, and the
/// reflector that watched through the dead server converges to the final state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_killed_mid_stream_other_server_watchers_see_every_event_and_its_clients_converge()
 {
    let Some(shared) = cluster().await else {
        return;
    };
    let mut cluster = shared.lock().await;
    cluster.heal().await.unwrap();
    let config = config(&cluster);
    let storage = Arc::new(EtcdStorage::connect(config.clone()).await.unwrap());
    let survivor = TestServer::start_with(test_builder().storage(storage))
        .await
        .unwrap();
    let a = client(&survivor);
    create_objects(a.clone()).await;
    let doomed = Server::start(&config, "127.0.0.1:0");
    let b = doomed.client();
    let (reflected, stop_reflector) = reflect(b.clone());

    let (until_tx, until_rx) = watch::channel(None);
    let watchers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(watcher(a.clone(), until_rx.clone())))
        .collect();
    let (stop_tx, stop_rx) = watch::channel(false);
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let through = if i % 2 == 0 { a.clone() } else { b.clone() };
            let object = object_name((i / 2) % OBJECTS);
            tokio::spawn(writer(through, i, object, stop_rx.clone()))
        })
        .collect();

    let held = wait_tokens(&a, 40).await;
    let url = doomed.kill();
    // Writes go on through the survivor while the dead server's clients fail, then a server
    // comes back at the dead one's address.
    let held = wait_tokens(&a, held + 40).await;
    let listen = url.trim_start_matches("http://").to_owned();
    let _restarted = Server::start(&config, &listen);
    wait_tokens(&a, held + 40).await;

    stop_tx.send(true).unwrap();
    let mut writes = Vec::new();
    for w in writers {
        writes.push(w.await.unwrap());
    }
    let state = final_state(a.clone()).await;
    until_tx.send(Some(revisions(&state))).unwrap();
    check_writes(&state, &writes);
    for w in watchers {
        check_watch(&w.await.unwrap(), &state);
    }
    let want = contents(&state.values().cloned().map(Arc::new).collect::<Vec<_>>());
    let deadline = Instant::now() + DEADLINE;
    while contents(&reflected.list()) != want {
        assert!(
            Instant::now() < deadline,
            "the dead server's reflector never converged: {:?} != {want:?}",
            contents(&reflected.list())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop_reflector.cancel();
}
