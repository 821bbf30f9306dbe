//! The library's modules form layers: each top-level module imports only the
//! modules that the table in `ARCHITECTURE.md` ("Layers") lets it, and that
//! table has no loop. This reads every file under `src/` (the binary,
//! `src/main.rs`, excepted: it sits above everything), collects the
//! `crate::X` and `super::…::X` paths that reach another top-level module, and
//! fails naming the file and line of each import the table does not allow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "architecture/imports.rs"]
mod imports;

use imports::{Import, imports, top_level_modules};

type Table = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every library source file under `src/`, as (path from the root, text).
fn library_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for entry in entries {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let shown = path.strip_prefix(root()).unwrap().display().to_string();
                out.push((shown, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("src"), &mut out);
    out.retain(|(path, _)| path != "src/main.rs");
    out
}

/// The table under "## Layers" in ARCHITECTURE.md: `module` → what it may import.
fn layering_table() -> Table {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a \"## Layers\" section");
    let section = section.split("\n## ").next().unwrap();
    let names = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut table = Table::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').collect();
        if let [_, module, may_import, ..] = cells[..]
            && let [module] = &names(module)[..]
        {
            table.insert(module.clone(), names(may_import).into_iter().collect());
        }
    }
    assert!(
        !table.is_empty(),
        "the Layers table of ARCHITECTURE.md has no rows"
    );
    table
}

/// A loop of the table, as `a -> b -> a`, if it has one.
fn find_loop(table: &Table) -> Option<String> {
    fn visit(
        m: &str,
        table: &Table,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|p| p == m) {
            return Some(format!("{} -> {m}", path[start..].join(" -> ")));
        }
        if !done.insert(m.to_owned()) {
            return None;
        }
        path.push(m.to_owned());
        let found = table
            .get(m)
            .into_iter()
            .flatten()
            .find_map(|n| visit(n, table, path, done));
        path.pop();
        found
    }
    let mut done = BTreeSet::new();
    table
        .keys()
        .find_map(|m| visit(m, table, &mut Vec::new(), &mut done))
}

/// What is wrong with `sources` against `table`, one line each.
fn violations(sources: &[(String, String)], table: &Table) -> Vec<String> {
    let modules = top_level_modules(sources);
    let mut out: Vec<String> = modules
        .iter()
        .filter(|m| !table.contains_key(*m))
        .map(|m| format!("module `{m}` has no row in the Layers table of ARCHITECTURE.md"))
        .collect();
    out.extend(table.keys().filter(|m| !modules.contains(*m)).map(|m| {
        format!(
            "the Layers table of ARCHITECTURE.md names `{m}`, which src/lib.rs does not declare"
        )
    }));
    out.extend(find_loop(table).map(|l| format!("the Layers table has a loop: {l}")));
    let mut used = Table::new();
    for import in imports(sources, &modules) {
        used.entry(import.from.clone())
            .or_default()
            .insert(import.to.clone());
        if !table
            .get(&import.from)
            .is_some_and(|may| may.contains(&import.to))
        {
            let Import {
                from,
                to,
                file,
                line,
            } = import;
            out.push(format!(
                "{file}:{line}: `{from}` imports `{to}`, which ARCHITECTURE.md does not allow"
            ));
        }
    }
    out.extend(find_loop(&used).map(|l| format!("the modules import each other in a loop: {l}")));
    out
}

#[test]
fn every_import_between_top_level_modules_follows_the_layers_table() {
    let problems = violations(&library_sources(), &layering_table());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_store_file_that_imports_leases_is_refused() {
    let mut sources = library_sources();
    let (_, text) = sources
        .iter_mut()
        .find(|(p, _)| p == "src/store/postgres/mod.rs")
        .unwrap();
    text.push_str("\nfn draw() -> String {\n    super::super::leases::new_token()\n}\n");
    let (_, text) = sources
        .iter_mut()
        .find(|(p, _)| p == "src/store/sqlite/errors.rs")
        .unwrap();
    text.insert_str(0, "use crate::{domain::At, leases::Leases};\n");
    let problems = violations(&sources, &layering_table());
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("src/store/sqlite/errors.rs:1: `store` imports `leases`")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("src/store/postgres/mod.rs:") && p.contains("`leases`")),
        "{problems:#?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("in a loop")),
        "{problems:#?}"
    );
}
