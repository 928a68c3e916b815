#!/usr/bin/env python3
"""Vendors Kubernetes' OpenAPI definitions (with their x-kubernetes-* extensions) from a wheel of
PyPI's kubernetes-validate into this directory, with descriptions stripped.

    pip download --no-deps kubernetes-validate==1.37.0 -d /tmp/kv
    python3 apiserver/openapi/vendor.py /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl v1.34.0

Writes definitions.json (compact, keys sorted) and PROVENANCE.md (package, version, file, sha256s).
"""
import hashlib
import json
import pathlib
import sys
import zipfile

HERE = pathlib.Path(__file__).resolve().parent


def strip(node, properties=False):
    """Drops the `description` annotations; a property named `description` (the keys of a
    `properties` object: PriorityClass's, JSONSchemaProps') is a field and stays."""
    if isinstance(node, dict):
        return {
            k: strip(v, k == "properties" and not properties)
            for k, v in node.items()
            if properties or k != "description"
        }
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main(wheel, k8s_version):
    wheel = pathlib.Path(wheel)
    member = f"kubernetes_validate/kubernetes-json-schema/{k8s_version}-local/_definitions.json"
    with zipfile.ZipFile(wheel) as z:
        raw = z.read(member)
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    version = next(l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Version:"))
    defs = json.loads(raw)["$defs"]
    out = json.dumps(strip(defs), sort_keys=True, separators=(",", ":")).encode()
    (HERE / "definitions.json").write_bytes(out)
    (HERE / "PROVENANCE.md").write_text(f"""# Provenance of definitions.json

- Package: kubernetes-validate {version} (PyPI, https://pypi.org/project/kubernetes-validate/), licence Apache-2.0
  (the wheel's `LICENSE`; the schemas are generated from Kubernetes' OpenAPI, also Apache-2.0).
- Wheel: `{wheel.name}`, sha256 `{hashlib.sha256(wheel.read_bytes()).hexdigest()}`
- File: `{member}`, sha256 `{hashlib.sha256(raw).hexdigest()}`, {len(defs)} definitions.
- Transformation (by `vendor.py`, never by hand): the `$defs` object only, every `description` annotation removed
  (properties named `description` kept), written as compact
  JSON with sorted keys. definitions.json sha256 `{hashlib.sha256(out).hexdigest()}`.
- Kubernetes {k8s_version}: the version the server reports in `/version` (`GIT_VERSION`), so the schema clients read
  from `/openapi/v3` and the merge rules apply agree with what the server says it is.

Regenerate: `pip download --no-deps kubernetes-validate=={version} -d /tmp/kv &&
python3 apiserver/openapi/vendor.py /tmp/kv/{wheel.name} {k8s_version}`.
""")


if __name__ == "__main__":
    main(*sys.argv[1:])
