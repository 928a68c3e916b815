//! A crate's module graph from its `use crate::` and `use super::` lines, and the circles in it
//! (for the tidy check: modules of one crate must not import each other round in a circle).
//!
//! Only top-level `use` items count (an indented one belongs to an inline module, such as
//! `mod tests`, which is part of its file's module). A path is attributed to the longest module
//! prefix that is a file of the crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module path inside a crate: `[]` for the crate root, `["a", "b"]` for `crate::a::b`.
pub(crate) type ModulePath = Vec<String>;

/// The module a source file under `src/` defines: `lib.rs`/`main.rs` the root, `a/mod.rs` and
/// `a.rs` module `a`, `a/b.rs` module `a::b`.
pub(crate) fn module_of(relative: &Path) -> ModulePath {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        let root = parts.is_empty() && matches!(stem, "lib" | "main");
        if stem != "mod" && !root {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// The full paths a `use` tree names: `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    // `X as Y` keeps X: the rename is cut off at `#` below.
    let tree: String = tree
        .replace(" as ", "#")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = tree[open + 1..]
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// The `use crate::`/`use super::` paths of a file's top-level `use` items, as module paths
/// (with `super` resolved against `module`; the item names are still on the end).
pub(crate) fn imported_paths(source: &str, module: &[String]) -> Vec<ModulePath> {
    let mut paths = Vec::new();
    let mut pending: Option<String> = None;
    for line in source.lines() {
        if pending.is_none() && !line.trim_start().starts_with("use ") {
            paths.extend(inline_paths(line));
        }
        let item = match pending.take() {
            Some(so_far) => so_far + line,
            None => {
                let Some(rest) = line
                    .strip_prefix("pub(crate) ")
                    .or_else(|| line.strip_prefix("pub "))
                    .unwrap_or(line)
                    .strip_prefix("use ")
                else {
                    continue;
                };
                rest.to_owned()
            }
        };
        let Some(tree) = item.trim().strip_suffix(';') else {
            pending = Some(item);
            continue;
        };
        for path in expand(tree) {
            let path = path.split('#').next().unwrap_or(&path);
            let mut segments = path.split("::");
            let mut base: ModulePath = match segments.next() {
                Some("crate") => Vec::new(),
                Some("super") => {
                    // In `a/mod.rs` or `a.rs` (module a), `super` is a's parent.
                    let mut parent = module.to_vec();
                    parent.pop();
                    parent
                }
                _ => continue,
            };
            for segment in segments {
                if segment == "super" {
                    base.pop();
                } else {
                    base.push(segment.to_owned());
                }
            }
            paths.push(base);
        }
    }
    paths
}

/// The `crate::a::b` paths written inline in a line of code (outside comments and `use` items).
fn inline_paths(line: &str) -> Vec<ModulePath> {
    let code = line.split("//").next().unwrap_or(line);
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| ident(c) || c == '$') {
            continue;
        }
        let path: ModulePath = code[at + "crate::".len()..]
            .split("::")
            .map_while(|segment| {
                let name: String = segment.chars().take_while(|c| ident(*c)).collect();
                let whole = name.len() == segment.len();
                (!name.is_empty()).then_some((name, whole))
            })
            .scan(true, |more, (name, whole)| {
                let keep = *more;
                *more = whole;
                keep.then_some(name)
            })
            .collect();
        if !path.is_empty() {
            paths.push(path);
        }
    }
    paths
}

/// A crate's import graph: module → the modules it imports from.
pub(crate) type Graph = BTreeMap<ModulePath, BTreeSet<ModulePath>>;

/// Reads every `.rs` file under `src` into an import graph.
pub(crate) fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    collect(src, &mut files);
    let modules: BTreeSet<ModulePath> = files
        .iter()
        .filter_map(|f| f.strip_prefix(src).ok().map(module_of))
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let Ok(relative) = file.strip_prefix(src) else {
            continue;
        };
        let module = module_of(relative);
        let source = fs::read_to_string(file).unwrap_or_default();
        let targets = graph.entry(module.clone()).or_default();
        for path in imported_paths(&source, &module) {
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| modules.contains(prefix))
                .unwrap_or_default();
            if target != module {
                targets.insert(target);
            }
        }
    }
    graph
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The circles of `graph`: each strongly connected set of two or more modules, sorted.
pub(crate) fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&ModulePath> = graph.keys().collect();
    let reach = |from: &ModulePath| -> BTreeSet<ModulePath> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&ModulePath, BTreeSet<ModulePath>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reachable[n].contains(*n) {
            continue;
        }
        let members: Vec<&ModulePath> = nodes
            .iter()
            .copied()
            .filter(|m| reachable[n].contains(*m) && reachable[m].contains(*n))
            .collect();
        done.extend(members.iter().map(|m| (*m).clone()));
        found.push(members.iter().map(|m| display(m)).collect());
    }
    found
}

fn display(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &str)]) -> Graph {
        let path = |s: &str| -> ModulePath {
            s.split("::")
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let mut g = Graph::new();
        for (from, to) in edges {
            g.entry(path(from)).or_default().insert(path(to));
            g.entry(path(to)).or_default();
        }
        g
    }

    #[test]
    fn a_circle_through_three_modules_is_found_once() {
        let g = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "")]);
        assert_eq!(circles(&g), vec![vec!["a", "b", "c"]]);
    }

    #[test]
    fn a_layered_graph_has_no_circle() {
        let g = graph(&[("a", "b"), ("a", "c"), ("b", "c"), ("c", "")]);
        assert!(circles(&g).is_empty());
    }

    #[test]
    fn use_trees_and_super_resolve_to_module_paths() {
        let source = "use std::fmt;\nuse crate::a::{B, c::{D, E as F}};\npub(crate) use super::g::H;\n    use crate::skipped::X;\nuse crate::{\n    x::Y,\n};\nfn f() { crate::p::q::r(); } // crate::comment::Z\n";
        let module = vec!["m".to_owned(), "n".to_owned()];
        let paths: Vec<String> = imported_paths(source, &module)
            .iter()
            .map(|p| p.join("::"))
            .collect();
        assert_eq!(
            paths,
            ["a::B", "a::c::D", "a::c::E", "m::g::H", "x::Y", "p::q::r"]
        );
    }

    #[test]
    fn files_name_their_modules() {
        let m = |p: &str| module_of(Path::new(p)).join("::");
        assert_eq!(m("lib.rs"), "");
        assert_eq!(m("a.rs"), "a");
        assert_eq!(m("a/mod.rs"), "a");
        assert_eq!(m("a/b.rs"), "a::b");
    }
}
