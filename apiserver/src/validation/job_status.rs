//! A job's status transitions (`ValidateJobStatusUpdate` and `validateJobStatus` in
//! `pkg/apis/batch/validation/validation.go`, with the options 1.34's
//! `pkg/registry/batch/job/strategy.go` `getStatusValidationOptions` sets under the default-on
//! `JobManagedBy` gate): counts non-negative and only growing, terminal conditions final,
//! `completionTime` only with, and required by, `Complete=True`, `startTime` required once
//! finished, and the success-policy (`SuccessCriteriaMet`) and pod-failure-policy
//! (`FailureTarget`) conditions' rules. Most rules run only when the fields they concern
//! change, as there, so that a status written before a rule existed can still be updated.
//! The indexed-job rules (`completedIndexes`, `failedIndexes`) are not checked.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

use super::Cause;
use super::field::{duplicate, go_string, invalid, required};

type Data = Map<String, Value>;

const NON_NEGATIVE: &str = "must be greater than or equal to 0";

/// `Invalid value` without the value (Kubernetes' `field.OmitValueType`).
fn omitted(path: &str, detail: &str) -> Cause {
    (path.to_owned(), format!("Invalid value: {detail}"))
}

/// The parts of a job the rules read.
struct Job<'a> {
    status: &'a Value,
    spec: &'a Value,
}

impl<'a> Job<'a> {
    fn of(data: &'a Data) -> Self {
        Job {
            status: data.get("status").unwrap_or(&Value::Null),
            spec: data.get("spec").unwrap_or(&Value::Null),
        }
    }

    /// `IsConditionTrue`.
    fn is(&self, condition: &str) -> bool {
        self.status
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == condition && c["status"] == "True")
    }

    fn complete(&self) -> bool {
        self.is("Complete")
    }

    fn failed(&self) -> bool {
        self.is("Failed")
    }

    fn finished(&self) -> bool {
        self.complete() || self.failed()
    }

    fn count(&self, field: &str) -> i64 {
        self.status.get(field).and_then(Value::as_i64).unwrap_or(0)
    }

    /// A field of the status, None when absent or null.
    fn field(&self, field: &str) -> Option<&'a Value> {
        self.status.get(field).filter(|v| !v.is_null())
    }

    fn time(&self, field: &str) -> Option<Time> {
        serde_json::from_value(self.field(field)?.clone()).ok()
    }
}

/// A time as Kubernetes prints it in a field error (its JSON, quoted).
fn printed(value: Option<&Value>) -> String {
    value.map_or_else(|| "null".to_owned(), Value::to_string)
}

/// `validateJobStatus`'s rules that hold for every status.
fn counts_and_uids(job: &Job, causes: &mut Vec<Cause>) {
    for field in ["active", "succeeded", "failed", "ready", "terminating"] {
        let n = job.count(field);
        if n < 0 {
            causes.push(invalid(
                &format!("status.{field}"),
                &n.to_string(),
                NON_NEGATIVE,
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for list in ["succeeded", "failed"] {
        let uids = job
            .field("uncountedTerminatedPods")
            .and_then(|u| u.get(list))
            .and_then(Value::as_array);
        for (i, uid) in uids.into_iter().flatten().enumerate() {
            let path = format!("status.uncountedTerminatedPods.{list}[{i}]");
            let uid = uid.as_str().unwrap_or("");
            if uid.is_empty() {
                causes.push(invalid(&path, "\"\"", "must not be empty"));
            } else if !seen.insert(uid) {
                causes.push(duplicate(&path, &go_string(uid)));
            }
        }
    }
}

/// The rules of `validateJobStatus` and `ValidateJobStatusUpdate` for a status written over
/// `old`'s (a job's spec cannot change through `/status`, and an update of the job keeps the
/// stored status, so these hold for every update).
pub(crate) fn job_status_update(new: &Data, old: &Data) -> Vec<Cause> {
    let (job, was) = (Job::of(new), Job::of(old));
    let mut causes = Vec::new();
    counts_and_uids(&job, &mut causes);
    let changed = |f: &str| job.field(f) != was.field(f);
    let complete_changed = job.complete() != was.complete();
    let failed_changed = job.failed() != was.failed();
    let finished_changed = job.finished() != was.finished();
    let failure_target_changed = job.is("FailureTarget") != was.is("FailureTarget");
    let completion_changed = changed("completionTime");
    let start_changed = changed("startTime");
    let status = "status.conditions";
    if (complete_changed || failed_changed) && job.complete() && job.failed() {
        causes.push(omitted(
            status,
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_changed || failure_target_changed) && job.complete() && job.is("FailureTarget") {
        causes.push(omitted(
            status,
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion = job.field("completionTime");
    if (complete_changed || completion_changed) && completion.is_some() && !job.complete() {
        causes.push(invalid(
            "status.completionTime",
            &printed(completion),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if (complete_changed || completion_changed) && completion.is_none() && job.complete() {
        causes.push(required(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        ));
    }
    if let (true, Some(start), Some(end)) = (
        start_changed || completion_changed,
        job.time("startTime"),
        job.time("completionTime"),
    ) && end.0 < start.0
    {
        causes.push(invalid(
            "status.completionTime",
            &printed(completion),
            "completionTime cannot be set before startTime",
        ));
    }
    if (finished_changed || changed("active")) && job.count("active") > 0 && job.finished() {
        causes.push(invalid(
            "status.active",
            &job.count("active").to_string(),
            "active>0 is invalid for finished job",
        ));
    }
    if (finished_changed || start_changed) && job.field("startTime").is_none() && job.finished() {
        causes.push(required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    let uncounted = job.field("uncountedTerminatedPods");
    let uncounted_any = ["succeeded", "failed"].iter().any(|k| {
        uncounted
            .and_then(|u| u.get(*k))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    });
    if (finished_changed || changed("uncountedTerminatedPods")) && job.finished() && uncounted_any {
        causes.push(invalid(
            "status.uncountedTerminatedPods",
            &printed(uncounted),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }
    let terminating = job.count("terminating");
    if (finished_changed || changed("terminating")) && terminating > 0 && job.finished() {
        causes.push(invalid(
            "status.terminating",
            &terminating.to_string(),
            "terminating>0 is invalid for finished job",
        ));
    }
    let success_met = job.is("SuccessCriteriaMet");
    if success_met && job.failed() {
        causes.push(omitted(
            status,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if success_met && job.is("FailureTarget") {
        causes.push(omitted(
            status,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    let success_policy = job.spec.get("successPolicy").is_some_and(|p| !p.is_null());
    if success_policy && !success_met && job.complete() {
        causes.push(omitted(
            status,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }
    transitions(&job, &was, &mut causes);
    causes
}

/// `ValidateJobStatusUpdate`'s own rules: what may not be undone.
fn transitions(job: &Job, was: &Job, causes: &mut Vec<Cause>) {
    for condition in ["Failed", "Complete", "FailureTarget"] {
        if was.is(condition) && !job.is(condition) {
            causes.push(omitted(
                "status.conditions",
                &format!("cannot disable the terminal {condition}=True condition"),
            ));
        }
    }
    let indexed = job.spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let elastic = indexed && job.spec.get("completions") == job.spec.get("parallelism");
    for (field, guarded) in [("failed", true), ("succeeded", !elastic)] {
        let n = job.count(field);
        if guarded && n < was.count(field) {
            causes.push(invalid(
                &format!("status.{field}"),
                &n.to_string(),
                &format!("cannot decrease the {field} counter"),
            ));
        }
    }
    let completion = job.field("completionTime");
    if completion.is_some()
        && was.field("completionTime").is_some()
        && completion != was.field("completionTime")
    {
        causes.push(invalid(
            "status.completionTime",
            &printed(completion),
            "completionTime cannot be mutated",
        ));
    }
    let suspended = job.spec.get("suspend").and_then(Value::as_bool) == Some(true);
    if was.field("startTime").is_some()
        && was.field("startTime") != job.field("startTime")
        && !suspended
    {
        causes.push(required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    let (met, was_met) = (job.is("SuccessCriteriaMet"), was.is("SuccessCriteriaMet"));
    if was_met && !met {
        causes.push(omitted(
            "status.conditions",
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if was.complete() && !was_met && met {
        causes.push(omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
}
