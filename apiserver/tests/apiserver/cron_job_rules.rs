//! CronJobs over HTTP: schedules parsed as robfig/cron's `ParseStandard`, `TZ=` refused in
//! favour of `timeZone`, time zones looked up in the IANA database, the 52-character name
//! limit. Named after the cases of Kubernetes' `pkg/apis/batch/validation/validation_test.go`
//! (TestValidateCronJob, TestValidateCronJobScheduleTZ).

use serde_json::{Value, json};

use crate::support::*;

const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";

fn cron_job(name: &str, schedule: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
           "spec": {"schedule": schedule,
                    "jobTemplate": {"spec": {"template": {"spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [{"name": "c", "image": "img:1"}]}}}}}})
}

/// The causes of creating `body` as (field, message), after checking it is a 422.
async fn refused(c: &kube_client::Client, body: &Value) -> Vec<(String, String)> {
    let (code, status) = post(c, CRONJOBS, body).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    invalid(&status)
        .1
        .into_iter()
        .map(|(field, _, message)| (field, message))
        .collect()
}

fn cause(field: &str, message: &str) -> (String, String) {
    (field.to_owned(), message.to_owned())
}

#[tokio::test]
async fn standard_schedules_and_descriptors_are_accepted() {
    let s = start().await;
    let c = client(&s);
    for (i, schedule) in ["*/5 1-5/2 ? jan-MAR mon,fri", "@hourly", "@every 1h30m"]
        .iter()
        .enumerate()
    {
        let (code, body) = post(&c, CRONJOBS, &cron_job(&format!("c{i}"), schedule)).await;
        assert_eq!(code, 201, "{schedule}: {body}");
    }
    let mut zoned = cron_job("zoned", "0 9 * * *");
    zoned["spec"]["timeZone"] = json!("America/New_York");
    let (code, body) = post(&c, CRONJOBS, &zoned).await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn non_numeric_and_out_of_range_schedules_are_422_with_the_parsers_text() {
    let s = start().await;
    let c = client(&s);
    assert_eq!(
        refused(&c, &cron_job("c", "error")).await,
        [cause(
            "spec.schedule",
            "Invalid value: \"error\": expected exactly 5 fields, found 1: [error]"
        )]
    );
    assert_eq!(
        refused(&c, &cron_job("c", "0 24 * * *")).await,
        [cause(
            "spec.schedule",
            "Invalid value: \"0 24 * * *\": end of range (24) above maximum (23): 24"
        )]
    );
    assert_eq!(
        refused(&c, &cron_job("c", "@every 5")).await,
        [cause(
            "spec.schedule",
            "Invalid value: \"@every 5\": failed to parse duration @every 5: time: missing unit in duration \"5\""
        )]
    );
}

#[tokio::test]
async fn spec_schedule_cannot_contain_tz_and_time_zone_must_be_known() {
    let s = start().await;
    let c = client(&s);
    assert_eq!(
        refused(&c, &cron_job("c", "TZ=UTC 0 * * * *")).await,
        [cause(
            "spec.schedule",
            "Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        )]
    );
    let mut unknown = cron_job("c", "0 * * * *");
    unknown["spec"]["timeZone"] = json!("Continent/Zone");
    assert_eq!(
        refused(&c, &unknown).await,
        [cause(
            "spec.timeZone",
            "Invalid value: \"Continent/Zone\": unknown time zone Continent/Zone"
        )]
    );
    let mut local = cron_job("c", "0 * * * *");
    local["spec"]["timeZone"] = json!("Local");
    assert_eq!(
        refused(&c, &local).await,
        [cause(
            "spec.timeZone",
            "Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        )]
    );
}

#[tokio::test]
async fn metadata_name_must_be_no_more_than_52_characters_and_the_template_selector_is_generated() {
    let s = start().await;
    let c = client(&s);
    let long = "c".repeat(53);
    assert_eq!(
        refused(&c, &cron_job(&long, "0 * * * *")).await,
        [cause(
            "metadata.name",
            &format!("Invalid value: \"{long}\": must be no more than 52 characters")
        )]
    );
    let (code, body) = post(&c, CRONJOBS, &cron_job(&"c".repeat(52), "0 * * * *")).await;
    assert_eq!(code, 201, "{body}");
    let mut selected = cron_job("s", "0 * * * *");
    selected["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
    selected["spec"]["concurrencyPolicy"] = json!("Sometimes");
    assert_eq!(
        refused(&c, &selected).await,
        [
            cause(
                "spec.concurrencyPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ),
            cause(
                "spec.jobTemplate.spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated"
            ),
        ]
    );
}
