//! Reads Rust sources as the compiler resolves their paths: which top-level
//! module of the crate each `crate::…` and `super::…` path reaches, from which
//! file and line. Comments and the insides of literals are not code, and an
//! inline module (`mod tests { … }`) is one level deeper than its file.

use std::collections::BTreeSet;

/// One import of top-level module `to` by a file of top-level module `from`.
#[derive(Debug)]
pub struct Import {
    pub from: String,
    pub to: String,
    pub file: String,
    pub line: usize,
}

/// The source with comments removed and the contents of string and character
/// literals blanked, so that only code is read.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i - 1] == '*' && chars[i] == '/') {
                out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 1;
        } else if c == 'r' && matches!(next, Some('"' | '#')) && (i == 0 || !ident(chars[i - 1])) {
            // A raw string: r"…", r#"…"#.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let start = i + 2 + hashes;
            let rest: String = chars[start..].iter().collect();
            let end = rest
                .find(&close)
                .map_or(chars.len(), |e| start + rest[..e].chars().count());
            out.extend(
                chars[i..end]
                    .iter()
                    .map(|&c| if c == '\n' { '\n' } else { ' ' }),
            );
            i = end + close.chars().count();
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
                out.push(if chars.get(i - 1) == Some(&'\n') {
                    '\n'
                } else {
                    ' '
                });
            }
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n'); a lifetime ('a) is left as it is.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Identifiers, `::` and single punctuation, each with its line.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(c) = rest.chars().next() {
            let len = if c.is_alphanumeric() || c == '_' {
                rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len())
            } else if rest.starts_with("::") {
                2
            } else {
                c.len_utf8()
            };
            if !c.is_whitespace() {
                out.push((rest[..len].to_owned(), n + 1));
            }
            rest = &rest[len..];
        }
    }
    out
}

/// The module path of a file: `src/store/postgres/mod.rs` is `store::postgres`.
fn module_path(file: &str) -> Vec<String> {
    let inner = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut path: Vec<String> = inner.split('/').map(str::to_owned).collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// The first segment of each path that starts at `t[at]` (one, or one per
/// item of a `{…}` group).
fn heads(t: &[(String, usize)], at: usize) -> Vec<String> {
    match t.get(at).map(|(s, _)| s.as_str()) {
        Some("{") => {
            let (mut depth, mut out, mut take) = (0, Vec::new(), true);
            for (s, _) in &t[at..] {
                match s.as_str() {
                    "{" => (depth, take) = (depth + 1, depth == 0),
                    "}" if depth == 1 => break,
                    "}" => depth -= 1,
                    "," => take = depth == 1,
                    s if take => (out.push(s.to_owned()), take = false).1,
                    _ => {}
                }
            }
            out
        }
        Some(s) => vec![s.to_owned()],
        None => vec![],
    }
}

/// Every reference from a file of one top-level module to another.
pub fn imports(sources: &[(String, String)], modules: &BTreeSet<String>) -> Vec<Import> {
    let mut out = Vec::new();
    for (file, text) in sources {
        let file_path = module_path(file);
        let Some(from) = file_path.first() else {
            continue;
        };
        let t = tokens(&code_only(text));
        // Inline modules (`mod tests { … }`) and the brace depth they close at.
        let (mut inline, mut depth) = (Vec::<(String, usize)>::new(), 0usize);
        for i in 0..t.len() {
            match t[i].0.as_str() {
                "{" => {
                    depth += 1;
                    if i >= 2 && t[i - 2].0 == "mod" {
                        inline.push((t[i - 1].0.clone(), depth));
                    }
                }
                "}" => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
            let previous = i.checked_sub(1).map(|p| t[p].0.as_str());
            let (starts_at, from_root) = match t[i].0.as_str() {
                "crate" if previous != Some("::") => (i + 2, true),
                "super" if previous != Some("::") => {
                    let ups = t[i..].chunks(2).take_while(|w| w[0].0 == "super").count();
                    let here = file_path.len() + inline.len();
                    (i + 2 * ups, ups == here)
                }
                _ => continue,
            };
            if !from_root || t.get(starts_at - 1).is_none_or(|(s, _)| s != "::") {
                continue;
            }
            for to in heads(&t, starts_at) {
                if &to != from && modules.contains(&to) {
                    let line = t[i].1;
                    let (from, file) = (from.clone(), file.clone());
                    out.push(Import {
                        from,
                        to,
                        file,
                        line,
                    });
                }
            }
        }
    }
    out
}

/// The top-level modules that `src/lib.rs` declares.
pub fn top_level_modules(sources: &[(String, String)]) -> BTreeSet<String> {
    let (_, lib) = sources.iter().find(|(p, _)| p == "src/lib.rs").unwrap();
    let t = tokens(&code_only(lib));
    t.windows(3)
        .filter(|w| w[0].0 == "mod" && w[2].0 == ";")
        .map(|w| w[1].0.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{imports, top_level_modules};

    #[test]
    fn comments_strings_and_inline_test_modules_are_read_for_what_they_are() {
        let source = "//! see crate::api\nconst S: &str = \"crate::api\";\nconst C: char = '{';\n\
                      mod tests {\n    use super::super::leases;\n}\nfn f<'a>(x: &'a str) { crate::clock::now(); }\n";
        let sources = vec![
            (
                "src/lib.rs".to_owned(),
                "pub mod api; pub mod clock; pub mod leases; pub mod store;".to_owned(),
            ),
            ("src/store/mod.rs".to_owned(), source.to_owned()),
        ];
        let modules = top_level_modules(&sources);
        let found: Vec<_> = imports(&sources, &modules)
            .into_iter()
            .map(|i| (i.to, i.line))
            .collect();
        assert_eq!(
            found,
            vec![("leases".to_owned(), 5), ("clock".to_owned(), 7)]
        );
    }
}
