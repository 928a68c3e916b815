//! Jobs' status transitions over HTTP (`PUT .../jobs/<name>/status`), named after the cases
//! of Kubernetes' `pkg/registry/batch/job/strategy_test.go` (TestStatusStrategy_ValidateUpdate,
//! with the default-on JobManagedBy gate of 1.34).

use serde_json::{Value, json};

use crate::support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const START: &str = "2026-01-01T10:00:00Z";
const LATER: &str = "2026-01-01T10:05:00Z";

fn job(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "img:1"}]}}}})
}

fn conditions(types: &[&str]) -> Value {
    let list: Vec<Value> = types
        .iter()
        .map(|t| json!({"type": t, "status": "True"}))
        .collect();
    json!(list)
}

/// Creates job `name` and writes `status` over its empty one; the answer of that write.
async fn write_status(c: &kube_client::Client, name: &str, status: Value) -> (u16, Value) {
    let (code, mut created) = post(c, JOBS, &job(name)).await;
    assert_eq!(code, 201, "{created}");
    created["status"] = status;
    put(c, &format!("{JOBS}/{name}/status"), &created).await
}

/// Writes `status` over the stored one of job `name`.
async fn update_status(c: &kube_client::Client, name: &str, status: Value) -> (u16, Value) {
    let (code, mut stored) = get(c, &format!("{JOBS}/{name}")).await;
    assert_eq!(code, 200, "{stored}");
    stored["status"] = status;
    put(c, &format!("{JOBS}/{name}/status"), &stored).await
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

/// A `FieldValueInvalid` cause.
fn bad(field: &str, message: &str) -> (String, String, String) {
    cause(field, "FieldValueInvalid", message)
}

/// A `FieldValueRequired` cause.
fn needed(field: &str, message: &str) -> (String, String, String) {
    cause(field, "FieldValueRequired", message)
}

/// Checks that a write was refused as 422 with exactly `causes`.
fn refused(code: u16, body: &Value, causes: &[(String, String, String)]) {
    assert_eq!(
        (code, body["reason"].as_str()),
        (422, Some("Invalid")),
        "{body}"
    );
    assert_eq!(invalid(body).1, causes);
}

#[tokio::test]
async fn job_must_allow_status_updates_to_a_complete_job() {
    let s = start().await;
    let c = client(&s);
    let (code, body) = write_status(&c, "j", json!({"startTime": START, "active": 1})).await;
    assert_eq!(code, 200, "{body}");
    let done = json!({"startTime": START, "completionTime": LATER, "succeeded": 1,
                      "conditions": conditions(&["SuccessCriteriaMet", "Complete"])});
    let (code, body) = update_status(&c, "j", done).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["completionTime"], LATER);
}

#[tokio::test]
async fn invalid_addition_of_both_failed_true_and_complete_true() {
    let s = start().await;
    let c = client(&s);
    let status = json!({"startTime": START, "completionTime": START,
                        "conditions": conditions(&["Complete", "Failed"])});
    let (code, body) = write_status(&c, "j", status).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        invalid(&body),
        (
            "Job.batch \"j\" is invalid: status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions".to_owned(),
            vec![bad("status.conditions", "Invalid value: cannot set Complete=True and Failed=true conditions"
            )]
        )
    );
}

#[tokio::test]
async fn invalid_addition_complete_true_without_setting_completion_time() {
    let s = start().await;
    let c = client(&s);
    let status = json!({"startTime": START, "conditions": conditions(&["Complete"])});
    let (code, body) = write_status(&c, "j", status).await;
    refused(
        code,
        &body,
        &[needed(
            "status.completionTime",
            "Required value: completionTime is required for Complete jobs",
        )],
    );
}

#[tokio::test]
async fn invalid_attempt_to_transition_to_failed_true_without_start_time() {
    let s = start().await;
    let c = client(&s);
    let status = json!({"conditions": conditions(&["FailureTarget", "Failed"])});
    let (code, body) = write_status(&c, "j", status).await;
    refused(
        code,
        &body,
        &[needed(
            "status.startTime",
            "Required value: startTime is required for finished job",
        )],
    );
}

#[tokio::test]
async fn invalid_attempt_setting_of_completion_time_when_there_is_no_complete_condition() {
    let s = start().await;
    let c = client(&s);
    let (code, body) = write_status(&c, "j", json!({"completionTime": LATER})).await;
    refused(
        code,
        &body,
        &[bad(
            "status.completionTime",
            &format!(
                "Invalid value: \"{LATER}\": cannot set completionTime when there is no Complete=True condition"
            ),
        )],
    );
}

#[tokio::test]
async fn invalid_removal_of_terminal_condition_failed_true_and_modifying_completion_time() {
    let s = start().await;
    let c = client(&s);
    let failed = json!({"startTime": START, "failed": 2,
                    "conditions": conditions(&["FailureTarget", "Failed"])});
    let (code, body) = write_status(&c, "j", failed).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = update_status(&c, "j", json!({"startTime": START, "failed": 1})).await;
    refused(
        code,
        &body,
        &[
            bad(
                "status.conditions",
                "Invalid value: cannot disable the terminal Failed=True condition",
            ),
            bad(
                "status.conditions",
                "Invalid value: cannot disable the terminal FailureTarget=True condition",
            ),
            bad(
                "status.failed",
                "Invalid value: 1: cannot decrease the failed counter",
            ),
        ],
    );
    let (code, _) = write_status(
        &c,
        "k",
        json!({"startTime": START, "completionTime": START,
               "conditions": conditions(&["SuccessCriteriaMet", "Complete"])}),
    )
    .await;
    assert_eq!(code, 200);
    let moved = json!({"startTime": START, "completionTime": LATER,
                       "conditions": conditions(&["SuccessCriteriaMet", "Complete"])});
    let (code, body) = update_status(&c, "k", moved).await;
    refused(
        code,
        &body,
        &[bad(
            "status.completionTime",
            &format!("Invalid value: \"{LATER}\": completionTime cannot be mutated"),
        )],
    );
}

#[tokio::test]
async fn invalid_attempt_to_set_completion_time_before_start_time_and_negative_counts() {
    let s = start().await;
    let c = client(&s);
    let status = json!({"startTime": LATER, "completionTime": START, "active": -1,
                    "conditions": conditions(&["SuccessCriteriaMet", "Complete"])});
    let (code, body) = write_status(&c, "j", status).await;
    refused(
        code,
        &body,
        &[
            bad(
                "status.active",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            bad(
                "status.completionTime",
                &format!(
                    "Invalid value: \"{START}\": completionTime cannot be set before startTime"
                ),
            ),
        ],
    );
}

#[tokio::test]
async fn invalid_success_criteria_met_with_failed_and_its_removal() {
    let s = start().await;
    let c = client(&s);
    let status = json!({"startTime": START,
                        "conditions": conditions(&["SuccessCriteriaMet", "FailureTarget"])});
    let (code, body) = write_status(&c, "j", status).await;
    refused(
        code,
        &body,
        &[bad(
            "status.conditions",
            "Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        )],
    );
    let met = json!({"startTime": START, "conditions": conditions(&["SuccessCriteriaMet"])});
    let (code, body) = write_status(&c, "k", met).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = update_status(&c, "k", json!({"startTime": START})).await;
    refused(
        code,
        &body,
        &[bad(
            "status.conditions",
            "Invalid value: cannot disable the SuccessCriteriaMet=True condition",
        )],
    );
}
