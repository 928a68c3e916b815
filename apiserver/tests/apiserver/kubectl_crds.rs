//! kubectl with CustomResourceDefinitions against the `kcache-apiserver` binary (skipped when
//! kubectl is not installed): apply a CRD with a schema, a status subresource and a printer
//! column, then apply (an unknown field refused as kubectl validates strictly), get, patch the
//! status of and delete custom objects.

use std::process::Command;

use crate::kubectl::{kubectl, session};

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: boolean, jsonPath: .status.ready}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
          status:
            type: object
            properties:
              ready: {type: boolean}
";

fn widget(size: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: {size}\n  unknown: dropped\n"
    )
}

#[test]
fn kubectl_applies_a_crd_then_applies_gets_patches_and_deletes_custom_objects() {
    let Some((kc, server, dir)) = session("crds") else {
        return;
    };
    let crd_file = dir.join("crd.yaml");
    std::fs::write(&crd_file, CRD).unwrap();
    let crd_path = crd_file.to_str().unwrap();
    let out = kubectl(&kc, &server, &["apply", "-f", crd_path]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    kubectl(
        &kc,
        &server,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=20s",
        ],
    );
    let file = dir.join("w1.yaml");
    std::fs::write(&file, widget("3")).unwrap();
    let path = file.to_str().unwrap();
    // kubectl validates strictly by default: the unknown (pruned) field is refused...
    let out = Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["apply", "-f", path])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(r#"Error from server (BadRequest): error when creating "#)
            && stderr.contains(r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.unknown""#),
        "{stderr}"
    );
    // ... and pruned without validation (fieldValidation=Ignore).
    let out = kubectl(&kc, &server, &["apply", "--validate=false", "-f", path]);
    assert!(out.contains("widget.example.com/w1 created"), "{out}");
    let table = kubectl(&kc, &server, &["get", "wd"]);
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "READY"], "{table}");
    assert_eq!(lines[1], ["w1", "3"], "{table}");
    let json = kubectl(&kc, &server, &["get", "widget", "w1", "-o", "json"]);
    let obj: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        obj["spec"].get("unknown").is_none(),
        "unknown fields are pruned: {obj}"
    );
    kubectl(
        &kc,
        &server,
        &[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"ready":true}}"#,
        ],
    );
    let ready = kubectl(
        &kc,
        &server,
        &["get", "widget", "w1", "-o", "jsonpath={.status.ready}"],
    );
    assert_eq!(ready, "true");
    std::fs::write(&file, widget("11")).unwrap();
    let out = Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["apply", "--validate=false", "-f", path])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ),
        "{stderr}"
    );
    let out = kubectl(&kc, &server, &["delete", "-f", crd_path]);
    assert!(out.contains("deleted"), "{out}");
    let out = Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["get", "widgets.example.com"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the resource is gone");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_gets_a_custom_object_through_each_served_version() {
    let Some((kc, server, dir)) = session("crd-versions") else {
        return;
    };
    crate::kubectl::apply_crd(&kc, &server, &dir, &crate::crd_versions::gadget_crd());
    let file = dir.join("g1.yaml");
    std::fs::write(
        &file,
        "apiVersion: example.com/v1beta1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 4\n",
    )
    .unwrap();
    let out = kubectl(&kc, &server, &["apply", "-f", file.to_str().unwrap()]);
    assert!(out.contains("gadget.example.com/g1 created"), "{out}");
    for version in ["v1beta1", "v1"] {
        let resource = format!("gadgets.{version}.example.com");
        let api_version = kubectl(
            &kc,
            &server,
            &["get", &resource, "g1", "-o", "jsonpath={.apiVersion}"],
        );
        assert_eq!(api_version, format!("example.com/{version}"));
        let table = kubectl(&kc, &server, &["get", &resource]);
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0], ["NAME", "SIZE"], "{table}");
        assert_eq!(lines[1], ["g1", "4"], "{table}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
