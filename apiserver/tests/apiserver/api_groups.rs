//! The API groups controllers call: authorization and authentication reviews, and the kinds
//! of autoscaling, discovery.k8s.io, storage.k8s.io and networking.k8s.io.

use kcache_apiserver::{AccessRule, TestServer};
use serde_json::{Value, json};

use crate::kubectl::{kubectl, kubectl_status, session};
use crate::support::{post, start, test_builder};

#[test]
fn kubectl_auth_can_i_whoami_and_api_resources_see_the_new_groups() {
    let Some((kc, server, dir)) = session("auth") else {
        return;
    };
    let (code, out) = kubectl_status(&kc, &server, &["auth", "can-i", "create", "pods"]);
    assert_eq!((code, out.trim()), (0, "yes"));
    let list = kubectl(&kc, &server, &["auth", "can-i", "--list"]);
    assert!(list.contains("*.*"), "{list}");
    let whoami = kubectl(&kc, &server, &["auth", "whoami", "-o", "json"]);
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["kind"], "SelfSubjectReview");
    assert_eq!(whoami["status"]["userInfo"]["username"], "kcache-admin");
    let resources = kubectl(&kc, &server, &["api-resources"]);
    for line in [
        "selfsubjectaccessreviews",
        "tokenreviews",
        "horizontalpodautoscalers",
        "endpointslices",
        "poddisruptionbudgets",
        "storageclasses",
        "persistentvolumes",
        "persistentvolumeclaims",
        "networkpolicies",
    ] {
        assert!(resources.contains(line), "{line} missing from\n{resources}");
    }
    let manifest = dir.join("sc.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: example.com/fast\n",
    )
    .unwrap();
    kubectl(&kc, &server, &["apply", "-f", manifest.to_str().unwrap()]);
    let sc = kubectl(&kc, &server, &["get", "sc", "fast"]);
    assert!(sc.starts_with("NAME   PROVISIONER"), "{sc}");
    assert!(sc.contains("example.com/fast"), "{sc}");
    let verbs = kubectl(
        &kc,
        &server,
        &[
            "api-resources",
            "-o",
            "wide",
            "--api-group=authorization.k8s.io",
        ],
    );
    let ssar = verbs
        .lines()
        .find(|l| l.starts_with("selfsubjectaccessreviews"))
        .unwrap();
    assert_eq!(ssar.split_whitespace().nth(4), Some("create"), "{ssar}");
}

#[tokio::test]
async fn token_review_authenticates_the_tokens_create_token_issues() {
    let s = start().await;
    let c = s.client().unwrap();
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/default/serviceaccounts", &sa)
            .await
            .0,
        201
    );
    let token_for = |audiences: Value| {
        let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": audiences}});
        let c = c.clone();
        async move {
            let (code, issued) = post(
                &c,
                "/api/v1/namespaces/default/serviceaccounts/robot/token",
                &request,
            )
            .await;
            assert_eq!(code, 201);
            issued["status"]["token"].as_str().unwrap().to_owned()
        }
    };
    let api_token = token_for(json!(["api"])).await;
    let review = |token: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": ["api"]}});
    let (code, answer) = post(
        &c,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &review(&api_token),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(answer["status"]["authenticated"], true);
    assert_eq!(
        answer["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    assert_eq!(answer["status"]["audiences"], json!(["api"]));
    let (_, forged) = post(
        &c,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &review("eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln"),
    )
    .await;
    assert_eq!(forged["status"]["authenticated"], false);
    // A request bearing a token for the API audience is the service account.
    let token = token_for(json!([])).await;
    let as_robot = kcache_apiserver::client_for(&s.url(), Some(&token), "default").unwrap();
    let ssr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, me) = post(
        &as_robot,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &ssr,
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:default:robot"
    );
}

#[tokio::test]
async fn access_rules_decide_what_access_reviews_answer() {
    let rules = vec![AccessRule {
        subjects: vec!["system:serviceaccounts".into()],
        verbs: vec!["get".into(), "list".into()],
        api_groups: vec![String::new()],
        resources: vec!["pods".into()],
        namespaces: vec!["default".into()],
    }];
    let s = TestServer::start_with(test_builder().access_rules(rules))
        .await
        .unwrap();
    let c = s.client().unwrap();
    let sar = |user: &str, verb: &str, ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
            "user": user, "groups": ["system:serviceaccounts"],
            "resourceAttributes": {"verb": verb, "resource": "pods", "namespace": ns}}})
    };
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let (code, allowed) = post(&c, path, &sar("robot", "list", "default")).await;
    assert_eq!((code, &allowed["status"]["allowed"]), (201, &json!(true)));
    let (_, denied) = post(&c, path, &sar("robot", "delete", "default")).await;
    assert_eq!(denied["status"]["allowed"], false);
    let (_, other_ns) = post(&c, path, &sar("robot", "list", "kube-system")).await;
    assert_eq!(other_ns["status"]["allowed"], false);
    // The admin is not in the rules' subjects.
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
    let (_, me) = post(
        &c,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &ssar,
    )
    .await;
    assert_eq!(me["status"]["allowed"], false);
}

#[tokio::test]
async fn reviews_are_create_only_and_not_stored() {
    let s = start().await;
    let c = s.client().unwrap();
    let (code, _) =
        crate::support::get(&c, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn new_kinds_are_served_with_their_types() {
    let s = start().await;
    let c = s.client().unwrap();
    let objects = [
        (
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 3}}),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-abc"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]}),
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "example.com/fast"}),
        ),
        (
            "/api/v1/persistentvolumes",
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv1"}}}),
        ),
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny"},
            "spec": {"podSelector": {}}}),
        ),
    ];
    for (path, obj) in objects {
        let (code, body) = post(&c, path, &obj).await;
        assert_eq!(code, 201, "{path}: {body}");
        let (code, _) = crate::support::get(
            &c,
            &format!("{path}/{}", obj["metadata"]["name"].as_str().unwrap()),
        )
        .await;
        assert_eq!(code, 200, "{path}");
    }
}
