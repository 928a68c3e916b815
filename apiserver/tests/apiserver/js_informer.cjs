// The JavaScript client's informer (@kubernetes/client-node) against the server, through the
// kubeconfig the binary wrote (argv[2]), unchanged: ADDED, MODIFIED and DELETED of a ConfigMap
// reach its handlers. Prints "ok" on success; exits 1 after 20 s without.
const k8s = require('@kubernetes/client-node');

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
const api = kc.makeApiClient(k8s.CoreV1Api);
const ns = 'default';
const name = 'from-js';
const seen = [];
const timer = setTimeout(() => {
  console.log('timeout; seen: ' + seen.join(','));
  process.exit(1);
}, 20000);
const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${ns}/configmaps`, () =>
  api.listNamespacedConfigMap({ namespace: ns }),
);
const mine = (obj) => obj.metadata.name === name;
informer.on('add', async (obj) => {
  if (!mine(obj)) return;
  seen.push('add');
  await api.patchNamespacedConfigMap(
    { name, namespace: ns, body: { data: { v: '2' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
});
informer.on('update', async (obj) => {
  if (!mine(obj) || obj.data.v !== '2') return;
  seen.push('update');
  await api.deleteNamespacedConfigMap({ name, namespace: ns });
});
informer.on('delete', (obj) => {
  if (!mine(obj)) return;
  seen.push('delete');
  clearTimeout(timer);
  // Stopping aborts the watch, which the informer reports as an error.
  informer.off('error', onError);
  informer.stop();
  console.log('ok');
  process.exit(0);
});
const onError = (err) => {
  console.log('informer error: ' + err + '; seen: ' + seen.join(','));
  process.exit(1);
};
informer.on('error', onError);
(async () => {
  await informer.start();
  await api.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name }, data: { v: '1' } },
  });
})().catch((err) => {
  console.log('error: ' + err);
  process.exit(1);
});
