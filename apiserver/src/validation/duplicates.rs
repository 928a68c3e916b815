//! JSON decoding that also reports duplicate fields, as sigs.k8s.io/json's
//! `DisallowDuplicateFields` does for the API server's strict decoding: the paths of keys met
//! twice in one object (`spec.replicas`, `spec.containers[0].name`); the last value wins, as
//! Go's decoding keeps it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Decodes `bytes` as one JSON value; answers it with the paths of its duplicate fields.
pub(crate) fn from_slice_with_duplicates(
    bytes: &[u8],
) -> Result<(Value, Vec<String>), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let (mut path, mut duplicates) = (String::new(), Vec::new());
    let value = Checked {
        path: &mut path,
        duplicates: &mut duplicates,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, duplicates))
}

/// A value being decoded at `path`, duplicates recorded in `duplicates`.
struct Checked<'a> {
    path: &'a mut String,
    duplicates: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let len = self.path.len();
        let mut items = Vec::new();
        loop {
            self.path.push_str(&format!("[{}]", items.len()));
            let item = seq.next_element_seed(Checked {
                path: &mut *self.path,
                duplicates: &mut *self.duplicates,
            })?;
            self.path.truncate(len);
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let len = self.path.len();
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if len > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            let value = access.next_value_seed(Checked {
                path: &mut *self.path,
                duplicates: &mut *self.duplicates,
            })?;
            if map.insert(key, value).is_some() {
                self.duplicates.push(self.path.clone());
            }
            self.path.truncate(len);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn duplicate_fields_are_reported_at_their_paths_and_the_last_value_kept() {
        let body = br#"{"kind":"A","spec":{"replicas":1,"items":[{"n":1,"n":2}],"replicas":3},"kind":"B"}"#;
        let (value, duplicates) = super::from_slice_with_duplicates(body).unwrap();
        assert_eq!(
            value,
            json!({"kind": "B", "spec": {"replicas": 3, "items": [{"n": 2}]}})
        );
        assert_eq!(duplicates, ["spec.items[0].n", "spec.replicas", "kind"]);
        assert!(super::from_slice_with_duplicates(b"{} x").is_err());
    }
}
