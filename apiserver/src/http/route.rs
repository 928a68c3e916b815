//! Routing: what a request path addresses.

use crate::shared::Shared;

/// What a path addresses.
#[derive(Debug)]
pub(super) enum Route<'a> {
    Version,
    CoreVersions,
    Groups,
    Group(&'a str),
    Resources(&'a str, &'a str),
    Resource(ResourcePath<'a>),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    /// `/.well-known/openid-configuration`: the service-account issuer's discovery document.
    OidcDiscovery,
    /// `/openid/v1/jwks`: the issuer's keys.
    Jwks,
    /// Under an API prefix but addressing nothing: a `Status` 404.
    NotFound,
    /// Outside every API prefix, or under `/apis/<group>` of a group not served: no handler
    /// at all, Go's `404 page not found` (kube-apiserver's last delegate is `http.NotFound`).
    Unhandled,
}

/// A path to a resource collection, object or subresource.
#[derive(Debug)]
pub(crate) struct ResourcePath<'a> {
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
    pub(crate) sub: Option<&'a str>,
}

pub(super) fn route<'a>(shared: &Shared, segs: &[&'a str]) -> Route<'a> {
    match segs {
        ["version"] => Route::Version,
        [".well-known", "openid-configuration"] => Route::OidcDiscovery,
        ["openid", "v1", "jwks"] => Route::Jwks,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", gv @ ..] => Route::OpenApiV3(gv.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::Resources("", "v1"),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g),
        ["apis", g, v] => Route::Resources(g, v),
        ["api", "v1", rest @ ..] => resource_route(shared, "", "v1", rest),
        ["apis", g, v, rest @ ..] => resource_route(shared, g, v, rest),
        ["api", ..] => Route::NotFound,
        _ => Route::Unhandled,
    }
}

fn resource_route<'a>(
    shared: &Shared,
    group: &'a str,
    version: &'a str,
    rest: &[&'a str],
) -> Route<'a> {
    let path = |plural, namespace, name, sub| {
        Route::Resource(ResourcePath {
            group,
            version,
            plural,
            namespace,
            name,
            sub,
        })
    };
    if let ["namespaces", ns, plural, tail @ ..] = rest {
        let namespaced = shared
            .find(group, version, plural)
            .is_some_and(|d| d.namespaced)
            || crate::reviews::find(group, version, plural).is_some_and(|r| r.namespaced);
        if namespaced {
            return match tail {
                [] => path(plural, Some(*ns), None, None),
                [name] => path(plural, Some(*ns), Some(*name), None),
                [name, sub] => path(plural, Some(*ns), Some(*name), Some(*sub)),
                _ => Route::NotFound,
            };
        }
    }
    match rest {
        [plural] => path(plural, None, None, None),
        [plural, name] => path(plural, None, Some(*name), None),
        [plural, name, sub] => path(plural, None, Some(*name), Some(*sub)),
        _ if group_served(shared, group) => Route::NotFound,
        _ => Route::Unhandled,
    }
}

/// Whether any resource (or review) of `group` is served: when not, kube-apiserver has no
/// handler for paths under `/apis/<group>/`. Only asked on a request's way to a 404.
pub(super) fn group_served(shared: &Shared, group: &str) -> bool {
    group.is_empty()
        || crate::reviews::GROUPS.contains(&group)
        || shared
            .served()
            .resources
            .iter()
            .any(|d| d.api.group == group)
}
