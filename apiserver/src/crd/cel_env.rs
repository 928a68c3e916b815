//! The CEL environment of CRD validation rules: cel-rust's standard library, cel-go's strings
//! extension, and the parts of Kubernetes' libraries (`k8s.io/apiserver/pkg/cel/library`)
//! written here; compiled programs are cached by their source.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::extractors::This;
use cel::objects::ResolveResult;
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use parking_lot::RwLock;
use regex::Regex;

/// Compiled rules by their source (the error text when one does not compile).
pub(super) type Compiled = Result<Arc<Program>, String>;
static PROGRAMS: LazyLock<RwLock<HashMap<String, Compiled>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));
const PROGRAM_CACHE: usize = 4096;

/// The environment rules compile and run in: CEL's standard library and, as Kubernetes' base
/// environment, cel-go's strings extension (`charAt`, `indexOf`, `lowerAscii`, `split`, `join`,
/// ...) — cel-rust's `extensions::strings`.
static ENV: LazyLock<Option<Arc<Env>>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    match env.add_extension(cel::extensions::strings) {
        Ok(()) => Some(Arc::new(env)),
        Err(error) => {
            tracing::error!(%error, "the CEL strings extension could not be added");
            None
        }
    }
});

/// A context of the rules' environment, with the part of Kubernetes' lists library that
/// cel-rust names nowhere else: `isSorted()` and `sum()`, and the regex library's `find` and
/// `findAll`.
pub(super) fn context() -> Option<Context<'static, 'static>> {
    let mut context = Context::with_env(Arc::clone(ENV.as_ref()?));
    let registered = context
        .add_function(
            "isSorted",
            |This(list): This<Cel>| -> Result<bool, ExecutionError> {
                let Cel::List(items) = list else {
                    return Err(ExecutionError::function_error("isSorted", "not a list"));
                };
                Ok(items.windows(2).all(|w| w[0] <= w[1]))
            },
        )
        .and_then(|()| {
            context.add_function("sum", |This(list): This<Cel>| -> ResolveResult {
                let Cel::List(items) = list else {
                    return Err(ExecutionError::function_error("sum", "not a list"));
                };
                let mut items = items.iter().cloned();
                let first = items.next().unwrap_or(Cel::Int(0));
                items.try_fold(first, |total, item| total + item)
            })
        })
        .and_then(|()| context.add_function("find", find))
        .and_then(|()| context.add_function("findAll", find_all));
    if let Err(error) = registered {
        tracing::error!(%error, "the Kubernetes lists functions could not be added");
    }
    Some(context)
}

pub(super) fn compiled(rule: &str) -> Compiled {
    if let Some(found) = PROGRAMS.read().get(rule) {
        return found.clone();
    }
    let made = match ENV.as_ref() {
        Some(env) => env.compile(rule).map(Arc::new).map_err(|e| e.to_string()),
        None => Err("the CEL environment could not be built".to_owned()),
    };
    let mut cache = PROGRAMS.write();
    if cache.len() >= PROGRAM_CACHE {
        cache.clear();
    }
    cache.insert(rule.to_owned(), made.clone());
    made
}

fn regex_of(name: &str, pattern: &str) -> Result<Regex, ExecutionError> {
    Regex::new(pattern).map_err(|e| ExecutionError::function_error(name, e.to_string()))
}

/// `<string>.find(<regex>)`: the first match, or `""`.
fn find(This(text): This<Arc<String>>, pattern: Arc<String>) -> ResolveResult {
    let re = regex_of("find", &pattern)?;
    let found = re
        .find(&text)
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    Ok(Cel::String(Arc::new(found)))
}

/// `<string>.findAll(<regex>)`: every match, in order.
fn find_all(This(text): This<Arc<String>>, pattern: Arc<String>) -> ResolveResult {
    let re = regex_of("findAll", &pattern)?;
    let found: Vec<Cel> = re
        .find_iter(&text)
        .map(|m| Cel::String(Arc::new(m.as_str().to_owned())))
        .collect();
    Ok(Cel::List(Arc::new(found)))
}
