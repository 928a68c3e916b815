"""The official Kubernetes Python client against kcache-apiserver (run by python.rs).

Each check asserts what a real API server answers; the script prints "ok" at the end.
Usage: python3 python_client.py KUBECONFIG
"""
import sys

from kubernetes import client, config, watch

config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "python"


def status_of(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except client.ApiException as e:
        return e.status
    return 200


core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))

# Create, patch, replace, no-op replace: a write that changes nothing keeps the resource version.
cm = client.V1ConfigMap(
    metadata=client.V1ObjectMeta(name="settings", labels={"app": "web"}), data={"mode": "a"}
)
created = core.create_namespaced_config_map(NS, cm)
assert created.metadata.resource_version, created
assert created.metadata.generation is None, "a ConfigMap has no generation"
patched = core.patch_namespaced_config_map("settings", NS, {"data": {"mode": "b"}})
assert patched.data == {"mode": "b"}, patched.data
assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
replaced = core.replace_namespaced_config_map("settings", NS, patched)
assert replaced.metadata.resource_version == patched.metadata.resource_version, "no-op write bumped RV"

# List with a label selector, then watch from the list's resource version.
listed = core.list_namespaced_config_map(NS, label_selector="app=web")
assert [i.metadata.name for i in listed.items] == ["settings"], listed.items
core.create_namespaced_config_map(
    NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="other", labels={"app": "db"}))
)
core.patch_namespaced_config_map("settings", NS, {"data": {"mode": "c"}})
events = []
w = watch.Watch()
for ev in w.stream(
    core.list_namespaced_config_map,
    NS,
    label_selector="app=web",
    resource_version=listed.metadata.resource_version,
    timeout_seconds=30,
):
    events.append((ev["type"], ev["object"].metadata.name, (ev["object"].data or {}).get("mode")))
    w.stop()
assert events == [("MODIFIED", "settings", "c")], events

# Errors carry the real statuses.
assert status_of(core.read_namespaced_config_map, "missing", NS) == 404
assert status_of(core.create_namespaced_config_map, NS, cm) == 409
bad = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Not_A_Name"))
assert status_of(core.create_namespaced_config_map, NS, bad) == 422
stale = core.read_namespaced_config_map("settings", NS)
stale.metadata.resource_version = created.metadata.resource_version
assert status_of(core.replace_namespaced_config_map, "settings", NS, stale) == 409

# A Deployment: generation, the scale subresource, the status subresource.
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1DeploymentSpec(
        replicas=1,
        selector=client.V1LabelSelector(match_labels={"app": "web"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "web"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx")]),
        ),
    ),
)
made = apps.create_namespaced_deployment(NS, dep)
assert made.metadata.generation == 1, made.metadata.generation
apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 3}})
assert apps.read_namespaced_deployment_scale("web", NS).spec.replicas == 3
scaled = apps.read_namespaced_deployment("web", NS)
assert scaled.spec.replicas == 3 and scaled.metadata.generation == 2, scaled.metadata
apps.patch_namespaced_deployment_status("web", NS, {"status": {"replicas": 3}})
assert apps.read_namespaced_deployment_status("web", NS).status.replicas == 3

# Delete, then the object is gone.
core.delete_namespaced_config_map("settings", NS)
assert status_of(core.read_namespaced_config_map, "settings", NS) == 404

# A paginated list: limit and _continue walk every object once, in name order, at the
# resource version of the first page, with remainingItemCount counting what is left.
for i in range(5):
    core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"page-{i}"))
    )
page = core.list_namespaced_config_map(NS, limit=2)
first_rv = page.metadata.resource_version
assert page.metadata.remaining_item_count == len(
    core.list_namespaced_config_map(NS).items
) - 2, page.metadata
walked = [i.metadata.name for i in page.items]
core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="page-9")))
while page.metadata._continue:
    page = core.list_namespaced_config_map(NS, limit=2, _continue=page.metadata._continue)
    assert page.metadata.resource_version == first_rv, page.metadata
    walked += [i.metadata.name for i in page.items]
assert walked == sorted(walked) and "page-9" not in walked, walked
assert [n for n in walked if n.startswith("page-")] == [f"page-{i}" for i in range(5)], walked

# Discovery.
assert client.VersionApi().get_code().git_version
groups = [g.name for g in client.ApisApi().get_api_versions().groups]
assert "apps" in groups, groups
print("ok")
