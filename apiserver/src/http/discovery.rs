//! Discovery: `/version`, API groups and resource lists, OpenAPI documents.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};
use serde_json::{Value, json};

use super::response::json_response;
use super::route::{Route, group_served};
use crate::error::ApiError;
use crate::shared::{GIT_VERSION, Shared};

pub(super) fn discovery(
    shared: &Shared,
    route: Route<'_>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let body = match route {
        Route::Version => json!({
            "major": "1", "minor": "34", "emulationMajor": "1", "emulationMinor": "34",
            "gitVersion": GIT_VERSION, "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
            "compiler": "gc", "platform": "linux/amd64"
        }),
        Route::CoreVersions => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]
        }),
        Route::Groups => {
            let groups: Vec<Value> = groups(shared)
                .iter()
                .map(|(g, v)| group_json(g, v))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        Route::Group(g) => {
            let Some(found) = groups(shared).into_iter().find(|(name, _)| name == g) else {
                return Ok(crate::health::not_found_page());
            };
            let mut v = group_json(&found.0, &found.1);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            v
        }
        Route::Resources(g, v) => {
            let mut resources = Vec::new();
            for def in shared
                .served()
                .resources
                .iter()
                .filter(|d| d.api.group == g && d.api.version == v)
            {
                let mut resource = json!({
                    "name": def.api.plural, "singularName": def.singular, "namespaced": def.namespaced,
                    "kind": def.api.kind,
                    "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                    "shortNames": def.short_names,
                });
                if !def.categories.is_empty() {
                    resource["categories"] = json!(def.categories);
                }
                resources.push(resource);
                if def.scale_subresource {
                    resources.push(json!({
                        "name": format!("{}/scale", def.api.plural), "singularName": "", "namespaced": def.namespaced,
                        "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
                    }));
                }
                if def.api.group.is_empty() && def.api.kind == "ServiceAccount" {
                    resources.push(json!({
                        "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                        "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"],
                    }));
                }
                if def.api.group.is_empty() && def.api.kind == "Pod" {
                    resources.extend(pod_subresources());
                }
                if super::has_approval(def) {
                    resources.push(json!({
                        "name": format!("{}/approval", def.api.plural), "singularName": "", "namespaced": false,
                        "kind": def.api.kind, "verbs": ["get", "patch", "update"],
                    }));
                }
                if def.status_subresource {
                    resources.push(json!({
                        "name": format!("{}/status", def.api.plural), "singularName": "", "namespaced": def.namespaced,
                        "kind": def.api.kind, "verbs": ["get", "patch", "update"],
                    }));
                }
            }
            resources.extend(crate::reviews::discovery(g, v));
            if resources.is_empty() {
                // A group nothing serves has no handler (the CRD handler delegates it).
                if !group_served(shared, g) {
                    return Ok(crate::health::not_found_page());
                }
                return Err(ApiError::no_route());
            }
            let gv = if g.is_empty() {
                v.to_owned()
            } else {
                format!("{g}/{v}")
            };
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
        }
        Route::OpenApiV2 if accepts_json(headers) => {
            return Ok(json_response(200, shared.openapi().v2.clone()));
        }
        Route::OpenApiV3Index => return Ok(json_response(200, shared.openapi().v3_index.clone())),
        Route::OpenApiV3(gv) => {
            let openapi = shared.openapi();
            let doc = openapi.v3.get(&gv).ok_or_else(ApiError::no_route)?;
            return Ok(json_response(200, doc.clone()));
        }
        Route::OpenApiV2 => {
            // The protobuf form (gnostic's OpenAPIv2 Document) is not generated: an empty
            // document, with which kubectl validates nothing on the client and computes
            // strategic merge patches from its compiled-in types, as before OpenAPI v3.
            let mut resp = Response::new(Body::empty());
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                ),
            );
            return Ok(resp);
        }
        Route::OidcDiscovery | Route::Jwks => {
            let issuer = shared.tokens.as_ref().ok_or_else(ApiError::no_route)?;
            let (body, content_type) = if matches!(route, Route::Jwks) {
                (issuer.jwks(), "application/jwk-set+json")
            } else {
                (issuer.discovery(), "application/json")
            };
            let mut resp = json_response(200, Bytes::from(body.to_string()));
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            return Ok(resp);
        }
        Route::Resource(_) | Route::NotFound => return Err(ApiError::no_route()),
        Route::Unhandled => return Ok(crate::health::not_found_page()),
    };
    Ok(json_response(200, Bytes::from(body.to_string())))
}

/// Whether the Accept header admits JSON (absent: yes).
/// The pod subresources served besides `status`, as a cluster lists them (by name).
fn pod_subresources() -> [Value; 3] {
    [
        json!({
            "name": "pods/binding", "singularName": "", "namespaced": true, "kind": "Binding",
            "verbs": ["create"],
        }),
        json!({
            "name": "pods/ephemeralcontainers", "singularName": "", "namespaced": true,
            "kind": "Pod", "verbs": ["get", "patch", "update"],
        }),
        json!({
            "name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
            "version": "v1", "kind": "Eviction", "verbs": ["create"],
        }),
    ]
}

fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|a| a.contains("json") || a.contains("*/*"))
}

/// The non-core groups and their versions, in order of first appearance.
fn groups(shared: &Shared) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for def in shared
        .served()
        .resources
        .iter()
        .filter(|d| !d.api.group.is_empty())
    {
        match out.iter_mut().find(|(g, _)| *g == def.api.group) {
            Some((_, versions)) => {
                if !versions.contains(&def.api.version) {
                    versions.push(def.api.version.clone());
                }
            }
            None => out.push((def.api.group.clone(), vec![def.api.version.clone()])),
        }
    }
    for group in crate::reviews::GROUPS {
        if !out.iter().any(|(g, _)| g == group) {
            out.push((group.to_owned(), vec!["v1".to_owned()]));
        }
    }
    out
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}
