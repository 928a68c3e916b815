//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`, what
//! kubectl's typed commands such as `kubectl create configmap` send), turned into the JSON the
//! server holds objects as.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` message: `typeMeta` (apiVersion,
//! kind), `raw` (the object's own message), `contentEncoding` and `contentType`. The object is
//! decoded with the descriptors of the Kubernetes protobuf definitions (compiled from `proto/`
//! by `build.rs`) and converted field by field; the types whose JSON form is not their message
//! (`Time`, `MicroTime`, `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`) are converted as
//! Kubernetes' JSON encoding writes them. Empty strings are left out, as Go's `omitempty` does
//! for the string fields kubectl's encoder always writes. Go's embedded structs (an ingress
//! rule's `IngressRuleValue`, a volume's `VolumeSource`, ...) are fields of their own in
//! protobuf and inlined in JSON: the fields the kind's schema does not declare are inlined.

use std::sync::OnceLock;

use base64::Engine as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as Field,
};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::schema::Schema;

/// The media type of Kubernetes' protobuf encoding.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// The descriptors of the Kubernetes protobuf definitions, decoded once.
fn pool() -> Result<&'static DescriptorPool, ApiError> {
    static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"))[..])
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| ApiError::internal(format!("the protobuf descriptors do not decode: {e}")))
}

fn bad(message: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("error decoding the protobuf body: {message}"))
}

fn message(pool: &DescriptorPool, name: &str) -> Result<MessageDescriptor, ApiError> {
    pool.get_message_by_name(name)
        .ok_or_else(|| ApiError::internal(format!("no protobuf message {name}")))
}

/// The message of the kind: `api.<first label of the group, or core>.<version>.<kind>`
/// (`rbac.authorization.k8s.io/v1` Role → `api.rbac.v1.Role`).
fn kind_message(
    pool: &DescriptorPool,
    api_version: &str,
    kind: &str,
) -> Result<MessageDescriptor, ApiError> {
    if kind == "DeleteOptions" {
        return message(pool, "apimachinery.pkg.apis.meta.v1.DeleteOptions");
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = group
        .split('.')
        .next()
        .filter(|g| !g.is_empty())
        .unwrap_or("core");
    pool.get_message_by_name(&format!("api.{package}.{version}.{kind}"))
        .ok_or_else(|| bad(format!("no protobuf definition of {api_version} {kind}")))
}

fn string_field(msg: &DynamicMessage, name: &str) -> String {
    msg.get_field_by_name(name)
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Decodes a protobuf request body into the object's JSON (with its `apiVersion` and `kind`).
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("the body does not start with the protobuf prefix k8s\\0"))?;
    let pool = pool()?;
    let unknown =
        DynamicMessage::decode(message(pool, "apimachinery.pkg.runtime.Unknown")?, envelope)
            .map_err(bad)?;
    let type_meta = unknown
        .get_field_by_name("typeMeta")
        .and_then(|v| v.as_message().cloned())
        .ok_or_else(|| bad("no typeMeta"))?;
    let (api_version, kind) = (
        string_field(&type_meta, "apiVersion"),
        string_field(&type_meta, "kind"),
    );
    let encoding = string_field(&unknown, "contentEncoding");
    if !encoding.is_empty() {
        return Err(bad(format!("unsupported contentEncoding {encoding:?}")));
    }
    let raw = unknown
        .get_field_by_name("raw")
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default();
    let object =
        DynamicMessage::decode(kind_message(pool, &api_version, &kind)?, raw).map_err(bad)?;
    let mut value = message_json(&object).map_err(bad)?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    if let Some(ty) = Schema::builtin().root(group, version, &kind) {
        ty.inline_embedded(&mut value);
    }
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version));
        map.insert("kind".into(), Value::String(kind));
    }
    Ok(value)
}

/// Go's zero time (year 1) in Unix seconds; JSON writes a zero time as `null`, and so does
/// this conversion for it, for anything earlier and for an empty `Time` message (what Go's
/// encoder writes for a zero time).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

fn int_field(msg: &DynamicMessage, name: &str) -> i64 {
    match msg.get_field_by_name(name).as_deref() {
        Some(Field::I64(n)) => *n,
        Some(Field::I32(n)) => i64::from(*n),
        _ => 0,
    }
}

fn bytes_field(msg: &DynamicMessage, name: &str) -> bytes::Bytes {
    msg.get_field_by_name(name)
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default()
}

/// A `Time` (RFC 3339, seconds) or `MicroTime` (RFC 3339, microseconds), UTC.
fn time_json(msg: &DynamicMessage, micro: bool) -> Result<Value, String> {
    let (seconds, nanos) = (int_field(msg, "seconds"), int_field(msg, "nanos"));
    if seconds <= GO_ZERO_TIME_SECONDS || (seconds == 0 && nanos == 0) {
        return Ok(Value::Null);
    }
    let nanos = if micro {
        i32::try_from(nanos).map_err(|e| e.to_string())?
    } else {
        0
    };
    let t = k8s_openapi::jiff::Timestamp::new(seconds, nanos).map_err(|e| e.to_string())?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(t.strftime(format).to_string()))
}

/// Embedded JSON (`RawExtension.raw`, `FieldsV1.Raw`).
fn raw_json(raw: &[u8]) -> Result<Value, String> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| format!("embedded JSON: {e}"))
}

/// A message as Kubernetes' JSON encoding writes it.
fn message_json(msg: &DynamicMessage) -> Result<Value, String> {
    let desc = msg.descriptor();
    let name = desc.full_name();
    let special = |suffix: &str| name.ends_with(suffix);
    if special(".apis.meta.v1.Time") {
        return time_json(msg, false);
    }
    if special(".apis.meta.v1.MicroTime") {
        return time_json(msg, true);
    }
    if special(".api.resource.Quantity") {
        return Ok(Value::String(string_field(msg, "string")));
    }
    if special(".util.intstr.IntOrString") {
        return Ok(if int_field(msg, "type") == 1 {
            Value::String(string_field(msg, "strVal"))
        } else {
            json!(int_field(msg, "intVal"))
        });
    }
    if special(".runtime.RawExtension") {
        return raw_json(&bytes_field(msg, "raw"));
    }
    if special(".apis.meta.v1.FieldsV1") {
        return raw_json(&bytes_field(msg, "Raw"));
    }
    let mut map = Map::new();
    for (field, value) in msg.fields() {
        let value = field_json(value)?;
        let empty = value.is_null() || value.as_str().is_some_and(str::is_empty);
        if !empty {
            map.insert(field.name().to_owned(), value);
        }
    }
    Ok(Value::Object(map))
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

fn field_json(value: &Field) -> Result<Value, String> {
    Ok(match value {
        Field::Bool(b) => json!(b),
        Field::I32(n) => json!(n),
        Field::I64(n) => json!(n),
        Field::U32(n) => json!(n),
        Field::U64(n) => json!(n),
        Field::EnumNumber(n) => json!(n),
        Field::F32(x) => json!(f64::from(*x)),
        Field::F64(x) => json!(x),
        Field::String(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Field::Message(m) => message_json(m)?,
        Field::List(items) => Value::Array(items.iter().map(field_json).collect::<Result<_, _>>()?),
        Field::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| Ok((map_key(k), field_json(v)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::prost::Message;

    /// Encodes `fields` (set on a new message of `name`) as protobuf.
    fn encode(name: &str, set: impl FnOnce(&mut DynamicMessage)) -> Vec<u8> {
        let mut msg = DynamicMessage::new(message(pool().unwrap(), name).unwrap());
        set(&mut msg);
        msg.encode_to_vec()
    }

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let type_meta = encode("apimachinery.pkg.runtime.TypeMeta", |m| {
            m.set_field_by_name("apiVersion", Field::String(api_version.into()));
            m.set_field_by_name("kind", Field::String(kind.into()));
        });
        let unknown = encode("apimachinery.pkg.runtime.Unknown", |m| {
            let tm = DynamicMessage::decode(
                message(pool().unwrap(), "apimachinery.pkg.runtime.TypeMeta").unwrap(),
                &type_meta[..],
            )
            .unwrap();
            m.set_field_by_name("typeMeta", Field::Message(tm));
            m.set_field_by_name("raw", Field::Bytes(raw.into()));
        });
        [MAGIC, &unknown].concat()
    }

    #[test]
    fn a_protobuf_configmap_decodes_into_its_json() {
        let meta = encode("apimachinery.pkg.apis.meta.v1.ObjectMeta", |m| {
            m.set_field_by_name("name", Field::String("settings".into()));
            m.set_field_by_name("namespace", Field::String(String::new()));
        });
        let raw = encode("api.core.v1.ConfigMap", |m| {
            let meta = DynamicMessage::decode(
                message(pool().unwrap(), "apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap(),
                &meta[..],
            )
            .unwrap();
            m.set_field_by_name("metadata", Field::Message(meta));
            m.set_field_by_name(
                "data",
                Field::Map([(MapKey::String("a".into()), Field::String("b".into()))].into()),
            );
        });
        let value = decode(&envelope("v1", "ConfigMap", raw)).unwrap();
        assert_eq!(
            value,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn bodies_that_are_not_kubernetes_protobuf_are_400() {
        for body in [
            &b""[..],
            b"k8s",
            b"k8s\0\xff\xff",
            b"{\"kind\":\"ConfigMap\"}",
        ] {
            assert_eq!(decode(body).unwrap_err().code, 400, "{body:?}");
        }
        let unknown_kind = envelope("v1", "Nope", Vec::new());
        assert_eq!(decode(&unknown_kind).unwrap_err().code, 400);
    }
}
