//! Field management of one write request: the manager (`fieldManager` or the User-Agent),
//! `force`, the endpoint's subresource, and the checks of the request's options
//! (k8s.io/apiserver `handlers/create.go`, `handlers/patch.go`, meta/v1 `validation`).

use http::HeaderMap;
use serde_json::Value;

use super::set::FieldSet;
use super::{ApplyError, Writer, field_set};
use crate::error::ApiError;
use crate::object::Object;
use crate::query::Query;
use crate::resource::ResourceDef;
use crate::schema::{Schema, TypeOf};
use crate::validation::FieldValidation;

/// Longest manager name (`FieldManagerMaxLength`).
const MAX_MANAGER: usize = 128;

/// The options kind a write's query is validated as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH other than apply.
    Patch,
    /// PATCH with an apply patch.
    Apply,
}

impl Verb {
    fn options(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Patch | Self::Apply => "PatchOptions",
        }
    }
}

/// Who writes, and how the write records its fields.
#[derive(Debug, Clone)]
pub(crate) struct FieldManager {
    manager: String,
    force: bool,
    status: bool,
    /// An apply: the object it makes already carries its managedFields.
    apply: bool,
    /// The request's `fieldValidation` (module `validation`), checked with its other options.
    validation: FieldValidation,
}

fn options_invalid(verb: Verb, field: &str, message: String) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        verb.options(),
        "",
        &[(field.to_owned(), message)],
    )
}

/// The User-Agent up to its first `/`, without non-printable characters (`managerOrUserAgent`).
fn user_agent_manager(headers: &HeaderMap) -> String {
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let name: String = agent
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let mut end = name.len().min(MAX_MANAGER);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

impl FieldManager {
    /// The field manager of a `verb` request (`status`: to the status subresource), with the
    /// query's `fieldManager` and `force` checked as the API server checks them.
    pub(crate) fn new(
        query: &Query,
        headers: &HeaderMap,
        verb: Verb,
        status: bool,
    ) -> Result<Self, ApiError> {
        let validation = FieldValidation::parse(query.get("fieldValidation"))
            .map_err(|(field, message)| options_invalid(verb, &field, message))?;
        let force = query.get("force");
        if force.is_some() && verb != Verb::Apply {
            return Err(options_invalid(
                verb,
                "force",
                "Forbidden: may not be specified for non-apply patch".into(),
            ));
        }
        let manager = match query.get("fieldManager") {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ if verb == Verb::Apply => {
                return Err(options_invalid(
                    verb,
                    "fieldManager",
                    "Required value: is required for apply patch".into(),
                ));
            }
            _ => user_agent_manager(headers),
        };
        if manager.len() > MAX_MANAGER {
            return Err(options_invalid(
                verb,
                "fieldManager",
                format!("Too long: may not be more than {MAX_MANAGER} bytes"),
            ));
        }
        if let Some((i, c)) = manager.char_indices().find(|(_, c)| c.is_control()) {
            return Err(options_invalid(
                verb,
                "fieldManager",
                format!(
                    "Invalid value: {manager:?}: invalid character U+{:04X} (at position {i})",
                    u32::from(c)
                ),
            ));
        }
        Ok(Self {
            manager: if manager.is_empty() {
                "unknown".into()
            } else {
                manager
            },
            force: force == Some("true"),
            status,
            apply: verb == Verb::Apply,
            validation,
        })
    }

    /// The field manager of a write by a controller inside the server (`status`: to the
    /// status subresource), such as the CRD controller's `kube-apiserver`.
    pub(crate) fn controller(manager: &str, status: bool) -> Self {
        Self {
            manager: manager.to_owned(),
            force: false,
            status,
            apply: false,
            validation: FieldValidation::Ignore,
        }
    }

    /// The request's `fieldValidation` directive (a controller's writes: `Ignore`).
    pub(crate) fn validation(&self) -> FieldValidation {
        self.validation
    }

    /// Whether the write goes to the status subresource.
    pub(crate) fn status(&self) -> bool {
        self.status
    }

    fn writer<'a>(
        &'a self,
        def: &'a ResourceDef,
        ty: &'a TypeOf,
        reset: &'a FieldSet,
        now: &'a str,
    ) -> Writer<'a> {
        Writer {
            manager: &self.manager,
            api_version: &def.api.api_version,
            subresource: if self.status { "status" } else { "" },
            ty: ty.ty(),
            reset,
            now,
        }
    }

    /// `new` (what `live`, `None` on create, becomes) with this write recorded in its
    /// managedFields; the `reset` fields (top-level) are left out. An apply's object (an
    /// apply-create going through the create path) already holds them and is kept as it is.
    pub(crate) fn record(
        &self,
        def: &ResourceDef,
        live: Option<&Object>,
        new: &Object,
        reset: &[&str],
    ) -> Result<Object, ApiError> {
        if self.apply {
            return Ok(new.clone());
        }
        let mut value = new.to_value();
        let live = live.map(Object::to_value);
        let reset = top_level(reset);
        let ty = Schema::type_of(&def.api, def.schema.as_deref());
        let now = now();
        let writer = self.writer(def, &ty, &reset, &now);
        super::update(live.as_ref(), &mut value, &writer);
        object(def, value)
    }

    /// The object an apply patch `config` makes of `live` (`None`: apply-create), with its
    /// managedFields; 409 on conflicts unless forced. The `reset` fields (top-level) are left
    /// out of the sets.
    pub(crate) fn apply(
        &self,
        def: &ResourceDef,
        live: Option<&Object>,
        config: &Value,
        reset: &[&str],
    ) -> Result<Value, ApiError> {
        if config
            .pointer("/metadata/managedFields")
            .is_some_and(|m| !m.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        if let Some(version) = config.get("apiVersion").and_then(Value::as_str)
            && version != def.api.api_version
        {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
                def.api.api_version
            )));
        }
        let live = live.map(Object::to_value);
        let reset = top_level(reset);
        let now = now();
        let ty = Schema::type_of(&def.api, def.schema.as_deref());
        let writer = self.writer(def, &ty, &reset, &now);
        super::apply(live.as_ref(), config, &writer, self.force).map_err(|e| match e {
            // As the API server: the typed conversion's error is not converted into a Status.
            ApplyError::Merge(m) => ApiError::unconverted(format!(
                "failed to create typed patch object ({}): {m}",
                object_gvknn(def, config)
            )),
            ApplyError::Conflicts(c) => c.into(),
        })
    }
}

/// `objectGVKNN`: `namespace/name; group/version, Kind=Kind` of an applied configuration.
fn object_gvknn(def: &ResourceDef, config: &Value) -> String {
    let meta = |field: &str| {
        config
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let api = &def.api;
    format!(
        "{}/{}; {}/{}, Kind={}",
        meta("namespace"),
        meta("name"),
        api.group,
        api.version,
        api.kind
    )
}

/// The set of whole top-level fields `fields`.
fn top_level(fields: &[&str]) -> FieldSet {
    let paths: Vec<[&str; 1]> = fields.iter().map(|f| [*f]).collect();
    let paths: Vec<&[&str]> = paths.iter().map(|p| p.as_slice()).collect();
    field_set(&paths)
}

/// `obj` with the managedFields of `from` (an apply's result that the strategy then narrowed,
/// as a status write keeps only the status).
pub(crate) fn with_managed_fields(
    def: &ResourceDef,
    obj: &Object,
    from: &Value,
) -> Result<Object, ApiError> {
    let mut value = obj.to_value();
    match (
        value.get_mut("metadata"),
        from.pointer("/metadata/managedFields"),
    ) {
        (Some(Value::Object(meta)), Some(entries)) => {
            meta.insert("managedFields".into(), entries.clone());
        }
        (Some(Value::Object(meta)), None) => {
            meta.remove("managedFields");
        }
        _ => {}
    }
    object(def, value)
}

fn object(def: &ResourceDef, value: Value) -> Result<Object, ApiError> {
    let mut obj = Object::from_value(value).map_err(|e| ApiError::internal(e.to_string()))?;
    obj.select_fields(&def.fields);
    Ok(obj)
}

/// Now as managedFields write it: RFC 3339, whole seconds, UTC.
fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
