//! Service-account tokens: a `TokenRequest` answers a JWT with Kubernetes' claims, verifiable
//! with the JWKS the issuer serves (`/openid/v1/jwks`, found through
//! `/.well-known/openid-configuration`); `TokenReview` checks signature, audience and the
//! service account and bound objects still being there.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

use crate::support::*;

const SAS: &str = "/api/v1/namespaces/default/serviceaccounts";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Creates the service account `name` in `default`; returns it.
async fn account(c: &kube_client::Client, name: &str) -> Value {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    let (code, created) = post(c, SAS, &sa).await;
    assert_eq!(code, 201, "{created}");
    created
}

async fn token(c: &kube_client::Client, account: &str, spec: Value) -> (u16, Value) {
    let request =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    post(c, &format!("{SAS}/{account}/token"), &request).await
}

async fn review(c: &kube_client::Client, token: &str, audiences: Value) -> Value {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                      "spec": {"token": token, "audiences": audiences}});
    let (code, answer) = post(c, "/apis/authentication.k8s.io/v1/tokenreviews", &body).await;
    assert_eq!(code, 201, "{answer}");
    answer["status"].clone()
}

/// The claims of `token`, verified with the served JWKS by jsonwebtoken.
async fn verified_claims(c: &kube_client::Client, token: &str, audience: &str) -> Value {
    let (code, discovery) = get(c, "/.well-known/openid-configuration").await;
    assert_eq!((code, discovery["issuer"].as_str()), (200, Some(ISSUER)));
    assert_eq!(discovery["jwks_uri"], format!("{ISSUER}/openid/v1/jwks"));
    let (code, jwks) = get(c, "/openid/v1/jwks").await;
    assert_eq!(code, 200);
    let set: JwkSet = serde_json::from_value(jwks).unwrap();
    let header = jsonwebtoken::decode_header(token).unwrap();
    assert_eq!(header.alg, Algorithm::ES256);
    let jwk = set
        .find(header.kid.as_deref().unwrap())
        .expect("the token's key is served");
    let key = DecodingKey::from_jwk(jwk).unwrap();
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_audience(&[audience]);
    validation.set_issuer(&[ISSUER]);
    jsonwebtoken::decode::<Value>(token, &key, &validation)
        .unwrap()
        .claims
}

#[tokio::test]
async fn token_requests_answer_jwts_verifiable_with_the_served_jwks() {
    let s = start().await;
    let c = client(&s);
    let account = account(&c, "builder").await;
    let (code, answer) = token(
        &c,
        "builder",
        json!({"audiences": ["vault"], "expirationSeconds": 1200}),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["spec"]["audiences"], json!(["vault"]));
    let jwt = answer["status"]["token"].as_str().unwrap();
    let claims = verified_claims(&c, jwt, "vault").await;
    assert_eq!(claims["sub"], "system:serviceaccount:default:builder");
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["aud"], json!(["vault"]));
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    );
    assert_eq!((exp - iat, claims["nbf"].as_i64()), (1200, Some(iat)));
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": "default",
               "serviceaccount": {"name": "builder", "uid": account["metadata"]["uid"]}})
    );
    // Without audiences the token is for the API audience, for an hour.
    let (_, default) = token(&c, "builder", json!({})).await;
    assert_eq!(
        default["spec"],
        json!({"audiences": [ISSUER], "expirationSeconds": 3600})
    );
    let claims = verified_claims(&c, default["status"]["token"].as_str().unwrap(), ISSUER).await;
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
}

#[tokio::test]
async fn bound_tokens_name_their_pod_and_node_and_die_with_it() {
    let s = start().await;
    let c = client(&s);
    account(&c, "runner").await;
    let (_, node) = post(
        &c,
        "/api/v1/nodes",
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    )
    .await;
    let pod = create_pod(
        &c,
        "/api/v1/namespaces/default/pods",
        &pod("default", "p1", "n1", "Running", "web"),
    )
    .await;
    let bound = |uid: &Value| json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": uid}});
    let (code, status) = token(&c, "runner", bound(&json!("not-the-uid"))).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (409, Some("Conflict")),
        "{status}"
    );
    let (code, answer) = token(&c, "runner", bound(&pod["metadata"]["uid"])).await;
    assert_eq!(code, 201, "{answer}");
    let jwt = answer["status"]["token"].as_str().unwrap().to_owned();
    let claims = verified_claims(&c, &jwt, ISSUER).await;
    assert_eq!(
        claims["kubernetes.io"]["pod"],
        json!({"name": "p1", "uid": pod["metadata"]["uid"]})
    );
    assert_eq!(
        claims["kubernetes.io"]["node"],
        json!({"name": "n1", "uid": node["metadata"]["uid"]})
    );
    let (code, status) = token(
        &c,
        "runner",
        json!({"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "cannot bind token to object of type apps/v1, Kind=Deployment"
    );
    assert_eq!(review(&c, &jwt, json!([])).await["authenticated"], true);
    let (code, _) = request(
        &c,
        "DELETE",
        "/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=0",
        None,
    )
    .await;
    assert_eq!(code, 200);
    let answer = review(&c, &jwt, json!([])).await;
    assert_eq!(answer["authenticated"], false, "{answer}");
    assert_eq!(answer["error"], "pods \"p1\" not found");
}

#[tokio::test]
async fn token_reviews_refuse_other_audiences_other_keys_and_deleted_accounts() {
    let s = start().await;
    let c = client(&s);
    account(&c, "robot").await;
    let (_, answer) = token(&c, "robot", json!({"audiences": ["vault"]})).await;
    let jwt = answer["status"]["token"].as_str().unwrap().to_owned();
    let ok = review(&c, &jwt, json!(["vault", "other"])).await;
    assert_eq!(
        (ok["authenticated"].as_bool(), &ok["audiences"]),
        (Some(true), &json!(["vault"]))
    );
    let wrong = review(&c, &jwt, json!([])).await;
    assert_eq!(wrong["authenticated"], false);
    assert_eq!(
        wrong["error"],
        format!("token audiences [\"vault\"] is invalid for the target audiences [\"{ISSUER}\"]")
    );
    // A token for another audience is not a bearer token of this server's API.
    let as_robot = kcache_apiserver::client_for(&s.url(), Some(&jwt), "default").unwrap();
    let ssr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (_, me) = post(
        &as_robot,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &ssr,
    )
    .await;
    assert_ne!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:default:robot"
    );
    // Another server's key.
    let other = start().await;
    let oc = client(&other);
    account(&oc, "robot").await;
    let (_, foreign) = token(&oc, "robot", json!({"audiences": ["vault"]})).await;
    let foreign = review(
        &c,
        foreign["status"]["token"].as_str().unwrap(),
        json!(["vault"]),
    )
    .await;
    assert_eq!(
        (
            foreign["authenticated"].as_bool(),
            foreign["error"].as_str()
        ),
        (Some(false), Some("invalid bearer token"))
    );
    // The account deleted, then made again with another uid.
    let (code, _) = request(&c, "DELETE", &format!("{SAS}/robot"), None).await;
    assert_eq!(code, 200);
    let gone = review(&c, &jwt, json!(["vault"])).await;
    assert_eq!(
        gone["error"],
        "service account default/robot has been deleted"
    );
    account(&c, "robot").await;
    let again = review(&c, &jwt, json!(["vault"])).await;
    assert!(
        again["error"]
            .as_str()
            .unwrap()
            .starts_with("service account UID ("),
        "{again}"
    );
}
