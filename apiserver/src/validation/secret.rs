//! Secrets and ConfigMaps (`pkg/apis/core/validation/validation.go`: `ValidateSecret`,
//! `ValidateSecretUpdate`, `ValidateConfigMap`): data keys are config keys, the data may not
//! exceed 1 MiB, each Secret type has the keys it needs, and a Secret's type is immutable.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::env::config_key_errors;
use super::field::{go_string, invalid, required};
use super::{Cause, invalid_value};

type Data = Map<String, Value>;

/// `core.MaxSecretSize`: the most bytes of data a Secret or ConfigMap holds.
const MAX_SIZE: usize = 1024 * 1024;

/// The annotation naming a token Secret's service account.
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";

fn too_long(path: &str) -> Cause {
    (
        path.to_owned(),
        format!("Too long: must have at most {MAX_SIZE} bytes"),
    )
}

/// The map at `key` of `obj` (none when absent).
fn map<'a>(obj: &'a Data, key: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The bytes of a base64 data value (a value that does not decode was refused by the
/// decoder).
fn bytes(value: &Value) -> Vec<u8> {
    let text = value.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

fn key_causes(path: &str, key: &str) -> Vec<Cause> {
    config_key_errors(key)
        .iter()
        .map(|m| (format!("{path}[{key}]"), invalid_value(key, m)))
        .collect()
}

/// What Go's `json.Unmarshal` into a `map[string]interface{}` says of `data` (None: it
/// decodes). Go's wording for the common failures; other syntax errors are worded by
/// serde_json.
fn json_map_error(data: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(_)) | Ok(Value::Null) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".to_owned()),
        Err(e) => {
            let first = data.iter().find(|b| !b.is_ascii_whitespace());
            match first {
                Some(&b) if !b"{[\"-0123456789tfn".contains(&b) => Some(format!(
                    "invalid character '{}' looking for beginning of value",
                    char::from(b)
                )),
                _ => Some(e.to_string()),
            }
        }
    }
}

/// `ValidateSecret` of a Secret's fields other than metadata (validated by the write path)
/// and `annotations`.
pub(crate) fn secret(obj: &Data, annotations: Option<&BTreeMap<String, String>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut total = 0;
    let data: Vec<(&String, Vec<u8>)> = map(obj, "data").map(|(k, v)| (k, bytes(v))).collect();
    for (key, value) in &data {
        causes.extend(key_causes("data", key));
        total += value.len();
    }
    if total > MAX_SIZE {
        causes.push(too_long("data"));
    }
    let has = |key: &str| data.iter().any(|(k, _)| *k == key);
    let value = |key: &str| data.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    let need = |key: &str| required(&format!("data[{key}]"), "");
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = annotations
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME))
                .map_or("", String::as_str);
            if name.is_empty() {
                causes.push(required(
                    &format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"),
                    "",
                ));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind.ends_with("json") {
                ".dockerconfigjson"
            } else {
                ".dockercfg"
            };
            match value(key) {
                None => causes.push(need(key)),
                Some(v) => {
                    if let Some(e) = json_map_error(v) {
                        causes.push(invalid(
                            &format!("data[{key}]"),
                            &go_string("<secret contents redacted>"),
                            &e,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(need("username"));
            causes.push(need("password"));
        }
        "kubernetes.io/ssh-auth" if value("ssh-privatekey").is_none_or(Vec::is_empty) => {
            causes.push(need("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    causes.push(need(key));
                }
            }
        }
        _ => {}
    }
    causes
}

/// `ValidateSecretUpdate` beyond immutable data (`immutable_data`): the type may not change,
/// and the new Secret must be valid.
pub(crate) fn secret_update(
    new: &Data,
    old: &Data,
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<Cause> {
    let type_of = |d: &Data| {
        d.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut causes = Vec::new();
    if type_of(new) != type_of(old) {
        causes.push(invalid(
            "type",
            &go_string(&type_of(new)),
            "field is immutable",
        ));
    }
    causes.extend(super::immutable_data(new, old, &["data"]));
    causes.extend(secret(new, annotations));
    causes
}

/// `ValidateConfigMap` (its object metadata is validated by the write path): keys of `data`
/// and `binaryData` are config keys found in only one of them, and the values hold at most
/// 1 MiB.
pub(crate) fn config_map(obj: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (bag, other) in [("data", "binaryData"), ("binaryData", "data")] {
        let others = obj.get(other).and_then(Value::as_object);
        for (key, _) in map(obj, bag) {
            causes.extend(key_causes(bag, key));
            if others.is_some_and(|o| o.contains_key(key)) {
                causes.push(invalid(
                    &format!("{bag}[{key}]"),
                    &go_string(key),
                    &format!("duplicate of key present in {other}"),
                ));
            }
        }
    }
    let text: usize = map(obj, "data")
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum();
    let binary: usize = map(obj, "binaryData").map(|(_, v)| bytes(v).len()).sum();
    if text + binary > MAX_SIZE {
        // As Kubernetes: the path "" (the whole object).
        causes.push(too_long(""));
    }
    causes
}

/// `Convert_v1_Secret_To_core_Secret`: `stringData` folded into `data` (a key in both takes
/// the `stringData` value) and dropped, so that it is never stored nor answered.
pub(crate) fn fold_string_data(obj: &mut Data) {
    let Some(Value::Object(strings)) = obj.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = obj
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(data) = data {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or("");
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Data {
        v.as_object().cloned().unwrap_or_default()
    }

    fn secret_of(d: &Data) -> Vec<Cause> {
        secret(d, None)
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn fields(causes: &[Cause]) -> Vec<&str> {
        causes.iter().map(|c| c.0.as_str()).collect()
    }

    /// TestValidateSecret: keys, the size limit and the type's keys.
    #[test]
    fn validate_secret() {
        assert!(
            secret_of(&obj(
                json!({"type": "Opaque", "data": {"a.b_c-D": b64("x")}})
            ))
            .is_empty()
        );
        let bad = secret_of(&obj(json!({"data": {"a/b": b64("x"), "..x": ""}})));
        assert_eq!(fields(&bad), ["data[..x]", "data[a/b]"]);
        let big = "x".repeat(MAX_SIZE + 1);
        let big = secret_of(&obj(json!({"data": {"a": b64(&big)}})));
        assert_eq!(big, [too_long("data")]);
        let tls = secret_of(&obj(
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}}),
        ));
        assert_eq!(
            tls,
            [("data[tls.key]".to_owned(), "Required value".to_owned())]
        );
        let basic = secret_of(&obj(json!({"type": "kubernetes.io/basic-auth"})));
        assert_eq!(fields(&basic), ["data[username]", "data[password]"]);
        let ok = secret_of(&obj(
            json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}),
        ));
        assert!(ok.is_empty());
        let ssh = secret_of(&obj(
            json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
        ));
        assert_eq!(fields(&ssh), ["data[ssh-privatekey]"]);
        let token = secret_of(&obj(json!({"type": "kubernetes.io/service-account-token"})));
        assert_eq!(
            fields(&token),
            ["metadata.annotations[kubernetes.io/service-account.name]"]
        );
    }

    /// TestValidateDockerConfigSecret.
    #[test]
    fn validate_docker_config_secret() {
        let t = "kubernetes.io/dockerconfigjson";
        let missing = secret_of(&obj(json!({"type": t})));
        assert_eq!(fields(&missing), ["data[.dockerconfigjson]"]);
        let bad = secret_of(&obj(
            json!({"type": t, "data": {".dockerconfigjson": b64("x")}}),
        ));
        assert_eq!(
            bad[0].1,
            "Invalid value: \"<secret contents redacted>\": invalid character 'x' looking for beginning of value"
        );
        let ok = secret_of(&obj(
            json!({"type": t, "data": {".dockerconfigjson": b64("{\"auths\":{}}")}}),
        ));
        assert!(ok.is_empty());
        let cfg = secret_of(&obj(
            json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("[]")}}),
        ));
        assert_eq!(
            cfg[0].1,
            "Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
    }

    /// TestValidateSecretUpdate: the type is immutable.
    #[test]
    fn validate_secret_update() {
        let old = obj(json!({"type": "Opaque"}));
        let new = obj(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}));
        assert_eq!(
            secret_update(&new, &old, None),
            [invalid(
                "type",
                "\"kubernetes.io/tls\"",
                "field is immutable"
            )]
        );
    }

    /// TestValidateConfigMap.
    #[test]
    fn validate_config_map() {
        let causes = config_map(&obj(
            json!({"data": {"a": "x", "b c": ""}, "binaryData": {"a": b64("y")}}),
        ));
        assert_eq!(fields(&causes), ["data[a]", "data[b c]", "binaryData[a]"]);
        let big = "x".repeat(MAX_SIZE + 1);
        assert_eq!(
            config_map(&obj(json!({"data": {"a": big}}))),
            [too_long("")]
        );
    }

    #[test]
    fn string_data_is_folded_into_data() {
        let mut s =
            obj(json!({"data": {"a": b64("old"), "b": b64("kept")}, "stringData": {"a": "new"}}));
        fold_string_data(&mut s);
        assert_eq!(
            Value::Object(s),
            json!({"data": {"a": b64("new"), "b": b64("kept")}})
        );
    }
}
