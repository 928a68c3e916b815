//! CertificateSigningRequests (`pkg/apis/certificates/validation/validation.go`:
//! `validateCertificateSigningRequest`, `validateConditions` and the update rules of the main
//! resource and its `status` and `approval` subresources). The request is checked to be a
//! `CERTIFICATE REQUEST` PEM block; its DER and signature are not parsed.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::field::{
    duplicate, forbidden, go_scalar, go_string, invalid, items, required, text, unsupported,
};
use super::{Cause, subdomain_errors};

type Data = Map<String, Value>;

/// `allValidUsages`, sorted as `sets.List` returns them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];
/// The condition types whose status may only be `True`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];
const STATUSES: &[&str] = &["False", "True", "Unknown"];
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Which write a CSR update is: what it may change besides metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CsrWrite {
    /// The main resource or `status`: the approval conditions may not change.
    Main,
    /// `status`: the certificate may be set (once).
    Status,
    /// `approval`: the Approved and Denied conditions may be added.
    Approval,
}

/// The bytes of a `[]byte` field (base64 in JSON).
fn bytes(value: &Value, key: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text(value, key))
        .unwrap_or_default()
}

/// The type of the first PEM block of `data` (`pem.Decode`), if it has one.
fn pem_type(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let rest = &text[start..];
    let kind = &rest[..rest.find("-----")?];
    rest.contains(&format!("-----END {kind}-----"))
        .then(|| kind.to_owned())
}

/// `ValidateSignerName`: a domain-prefixed path.
fn signer_name(name: &str, causes: &mut Vec<Cause>) {
    let path = "spec.signerName";
    if name.is_empty() {
        causes.push(required(path, ""));
        return;
    }
    let Some((domain, rest)) = name.split_once('/') else {
        causes.push(invalid(
            path,
            &go_string(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    causes.extend(
        subdomain_errors(domain)
            .iter()
            .map(|m| invalid(path, &go_string(domain), m)),
    );
    if rest.is_empty() {
        causes.push(invalid(
            path,
            &go_string(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
    }
}

/// `validateCertificateSigningRequest` with the options of a create (`old`: None) or of an
/// update from `old` (existing data keeps what it already has).
pub(crate) fn csr(data: &Data, old: Option<&Data>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.and_then(|o| o.get("spec"));
    if pem_type(&bytes(spec, "request")).as_deref() != Some("CERTIFICATE REQUEST") {
        let value = spec.get("request").unwrap_or(&Value::Null);
        causes.push(invalid(
            "spec.request",
            &go_scalar(value),
            "PEM block type must be CERTIFICATE REQUEST",
        ));
    }
    let usages = items(spec, "usages");
    if usages.is_empty() {
        causes.push(required("spec.usages", ""));
    }
    let old_usages = old_spec.map_or(&[][..], |s| items(s, "usages"));
    let allow_unknown = old_usages
        .iter()
        .any(|u| !USAGES.contains(&u.as_str().unwrap_or("")));
    let allow_duplicates = old_usages
        .iter()
        .enumerate()
        .any(|(i, u)| old_usages[..i].contains(u));
    let mut seen = Vec::new();
    for (i, usage) in usages.iter().enumerate() {
        let usage = usage.as_str().unwrap_or("");
        if !allow_unknown && !USAGES.contains(&usage) {
            causes.push(unsupported(&format!("spec.usages[{i}]"), usage, USAGES));
        }
        if seen.contains(&usage) && !allow_duplicates {
            causes.push(duplicate(&format!("spec.usages[{i}]"), &go_string(usage)));
        }
        seen.push(usage);
    }
    let signer = text(spec, "signerName");
    let legacy_before = old_spec.is_some_and(|s| text(s, "signerName") == LEGACY_SIGNER);
    if signer == LEGACY_SIGNER && !legacy_before {
        causes.push(invalid(
            "spec.signerName",
            &go_string(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else if signer != LEGACY_SIGNER {
        signer_name(signer, &mut causes);
    }
    if let Some(seconds) = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .filter(|s| *s < 600)
    {
        causes.push(invalid(
            "spec.expirationSeconds",
            &seconds.to_string(),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    conditions(data, &mut causes);
    causes
}

fn condition_list(data: &Data) -> &[Value] {
    data.get("status")
        .map_or(&[][..], |s| items(s, "conditions"))
}

/// `validateConditions` (for a new object: existing data with duplicates is not tolerated).
fn conditions(data: &Data, causes: &mut Vec<Cause>) {
    let path = "status.conditions";
    let (mut approved, mut denied) = (false, false);
    let mut seen = Vec::new();
    for (i, c) in condition_list(data).iter().enumerate() {
        let kind = text(c, "type");
        if kind.is_empty() {
            causes.push(required(&format!("{path}[{i}].type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            STATUSES
        };
        match text(c, "status") {
            "" => causes.push(required(&format!("{path}[{i}].status"), "")),
            s if !allowed.contains(&s) => {
                causes.push(unsupported(&format!("{path}[{i}].status"), s, allowed));
            }
            _ => {}
        }
        let exclusive = match kind {
            "Approved" => {
                approved = true;
                denied
            }
            "Denied" => {
                denied = true;
                approved
            }
            _ => false,
        };
        if exclusive {
            causes.push(invalid(
                path,
                &go_string(kind),
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if seen.contains(&kind) {
            causes.push(duplicate(&format!("{path}[{i}].type"), &go_string(kind)));
        }
        seen.push(kind);
    }
}

fn of_type<'a>(data: &'a Data, kind: &str) -> Vec<&'a Value> {
    condition_list(data)
        .iter()
        .filter(|c| text(c, "type") == kind)
        .collect()
}

/// `validateCertificateSigningRequestUpdate` for `write`.
pub(crate) fn csr_update(new: &Data, old: &Data, write: CsrWrite) -> Vec<Cause> {
    let mut causes = csr(new, Some(old));
    let path = "status.conditions";
    for kind in ["Approved", "Denied", "Failed"] {
        if of_type(new, kind).len() < of_type(old, kind).len() {
            causes.push(forbidden(
                path,
                &format!(
                    "updates may not remove a condition of type {}",
                    go_string(kind)
                ),
            ));
        }
    }
    if write != CsrWrite::Approval {
        for kind in ["Approved", "Denied"] {
            let (n, o) = (of_type(new, kind), of_type(old, kind));
            if n.len() > o.len() {
                causes.push(forbidden(
                    path,
                    &format!(
                        "updates may not add a condition of type {}",
                        go_string(kind)
                    ),
                ));
            } else if n.len() == o.len() && n != o {
                causes.push(forbidden(
                    path,
                    &format!(
                        "updates may not modify a condition of type {}",
                        go_string(kind)
                    ),
                ));
            }
        }
    }
    let certificate = |d: &Data| d.get("status").map(|s| bytes(s, "certificate"));
    let (new_cert, old_cert) = (
        certificate(new).unwrap_or_default(),
        certificate(old).unwrap_or_default(),
    );
    if new_cert != old_cert {
        if write != CsrWrite::Status {
            causes.push(forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            causes.push(forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        } else if pem_type(&new_cert).as_deref() != Some("CERTIFICATE") {
            causes.push(invalid(
                "status.certificate",
                "\"<certificate data>\"",
                "must contain at least one CERTIFICATE PEM block",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> String {
        let pem = "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n";
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    fn data(status: Value) -> Data {
        json!({"spec": {"request": request(), "usages": ["client auth"],
                        "signerName": "example.com/signer"}, "status": status})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    /// `TestValidateCertificateSigningRequestCreate`'s valid case and its "missing usages"
    /// and "signerName" cases.
    #[test]
    fn test_validate_certificate_signing_request_create() {
        assert!(csr(&data(json!({})), None).is_empty());
        let mut bad = data(json!({}));
        bad["spec"]["usages"] = json!([]);
        bad["spec"]["signerName"] = json!("");
        bad["spec"]["request"] = json!("");
        let paths: Vec<String> = csr(&bad, None).into_iter().map(|c| c.0).collect();
        assert_eq!(paths, ["spec.request", "spec.usages", "spec.signerName"]);
    }

    /// `TestValidateCertificateSigningRequestUpdate`'s "add Approved condition" cases: refused
    /// on the main resource and `status`, allowed through `approval`; both Approved and Denied
    /// refused.
    #[test]
    fn test_validate_certificate_signing_request_update_approval() {
        let old = data(json!({}));
        let approved = data(json!({"conditions": [{"type": "Approved", "status": "True"}]}));
        let got = csr_update(&approved, &old, CsrWrite::Status);
        assert_eq!(
            got,
            [forbidden(
                "status.conditions",
                "updates may not add a condition of type \"Approved\""
            )]
        );
        assert!(csr_update(&approved, &old, CsrWrite::Approval).is_empty());
        let both = data(
            json!({"conditions": [{"type": "Approved", "status": "True"},
                                             {"type": "Denied", "status": "True"}]}),
        );
        assert_eq!(csr_update(&both, &old, CsrWrite::Approval).len(), 1);
    }
}
