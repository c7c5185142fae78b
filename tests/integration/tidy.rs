//! The architecture's invariants as tests (ARCHITECTURE.md, "Invariants"): a text scan of
//! src/, so a rule broken in review fails here, naming the rule and the place.

use std::path::{Path, PathBuf};

use crate::common::root;

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read src dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// (file relative to the crate root, line number, line) of every line that is code, not a
/// comment, in the files under `src/<under>` (a file or a folder).
fn code_lines(under: &str) -> Vec<(String, usize, String)> {
    let base = root();
    let path = base.join("src").join(under);
    let files = if path.is_dir() {
        sources(&path)
    } else {
        vec![path]
    };
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        let name = f.strip_prefix(&base).unwrap_or(&f).display().to_string();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if !t.starts_with("//") {
                out.push((name.clone(), i + 1, line.to_string()));
            }
        }
    }
    out
}

/// `code_lines` without each file's `#[cfg(test)]` module and what follows it (tests may
/// print what they measured).
fn library_lines(under: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut in_tests: Option<String> = None;
    for (f, n, l) in code_lines(under) {
        if in_tests.as_deref() != Some(f.as_str()) {
            if l.trim() == "#[cfg(test)]" {
                in_tests = Some(f.clone());
                continue;
            }
            out.push((f, n, l));
        }
    }
    out
}

/// Fails naming `rule` and every line of `lines` that holds one of `banned`.
fn forbid(rule: &str, lines: &[(String, usize, String)], banned: &[&str]) {
    let hits: Vec<String> = lines
        .iter()
        .filter(|(_, _, l)| banned.iter().any(|b| l.contains(b)))
        .map(|(f, n, l)| format!("  {f}:{n}: {}", l.trim()))
        .collect();
    assert!(hits.is_empty(), "{rule}:\n{}", hits.join("\n"));
}

#[test]
fn verify_shares_no_code_with_the_anonymizer() {
    forbid(
        "verify is the safety case and shares no code with hierarchy, forest, algo or release",
        &code_lines("verify"),
        &[
            "crate::hierarchy",
            "crate::forest",
            "crate::algo",
            "crate::release",
        ],
    );
}

#[test]
fn algorithms_and_the_release_do_no_io_and_no_sql() {
    let banned = [
        "std::fs",
        "std::io",
        "std::net",
        "rusqlite",
        "datafusion",
        "tokio",
        "Warehouse",
        ".sql(",
        "println!",
        "eprintln!",
    ];
    for under in ["algo", "release"] {
        forbid(
            &format!("src/{under} does no I/O and knows no SQL (algorithms get a Forest, the release an algo::Output)"),
            &code_lines(under),
            &banned,
        );
    }
}

#[test]
fn datafusion_sessions_are_made_in_the_warehouse_only() {
    // A cluster's Ballista processes and its client share Ballista's session settings with
    // relanon's codec (pipeline::cluster); they query no warehouse table themselves (a
    // shard's task opens the warehouse through warehouse::session like any run).
    let outside: Vec<(String, usize, String)> = code_lines("")
        .into_iter()
        .filter(|(f, _, _)| {
            !f.starts_with("src/warehouse/") && !f.starts_with("src/pipeline/cluster/")
        })
        .collect();
    forbid(
        "DataFusion sessions over the warehouse are made by warehouse::session only (one set of settings: identifiers keep their case, strings stay Utf8)",
        &outside,
        &["SessionContext::new", "SessionConfig::new"],
    );
}

#[test]
fn no_unwrap_in_the_library_or_the_binary() {
    forbid(
        "no unwrap() in src/: return a typed error, or expect() a true invariant with its reason",
        &code_lines(""),
        &[".unwrap()"],
    );
}

#[test]
fn every_source_file_opens_with_its_module_header() {
    let missing: Vec<String> = sources(&root().join("src"))
        .into_iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read source");
            !text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "every file under src/ opens with a //! header saying what it is for:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_library_reports_only_through_progress() {
    let library: Vec<(String, usize, String)> = library_lines("")
        .into_iter()
        .filter(|(f, _, _)| !f.starts_with("src/cli/") && f != "src/main.rs")
        .collect();
    forbid(
        "the library prints nothing and draws nothing: phases, counts and warnings go through progress::Progress, which the binary (src/cli) shows",
        &library,
        &["indicatif", "println!", "print!(", "std::io::stderr", "std::io::stdout"],
    );
}

/// The algorithm modules under src/algo/: each one that registers a `Spec` (a `static` of
/// type `Spec`), as a path under src/ (`algo/lattice.rs`, `algo/baseline`) and its name.
fn algorithm_modules() -> Vec<(String, String)> {
    let dir = root().join("src/algo");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("read src/algo") {
        let p = e.expect("dir entry").path();
        let name = p
            .file_stem()
            .expect("a named entry")
            .to_string_lossy()
            .to_string();
        let (path, files) = if p.is_dir() {
            (format!("algo/{name}"), sources(&p))
        } else {
            (format!("algo/{name}.rs"), vec![p.clone()])
        };
        let registers = files.iter().any(|f| {
            std::fs::read_to_string(f)
                .expect("read source")
                .lines()
                .any(|l| l.contains("static ") && l.contains(": Spec"))
        });
        if registers && name != "mod" {
            out.push((path, name));
        }
    }
    out.sort();
    out
}

#[test]
fn kernels_know_no_algorithm_and_algorithms_reach_each_other_only_through_the_registry() {
    let algorithms = algorithm_modules();
    assert!(
        algorithms.len() >= 8,
        "the algorithm modules are found by their Spec: {algorithms:?}"
    );
    let banned: Vec<String> = algorithms
        .iter()
        .map(|(_, a)| format!("algo::{a}::"))
        .collect();
    let banned: Vec<&str> = banned.iter().map(String::as_str).collect();
    forbid(
        "algo/kernel is shared by the algorithms and names none of them",
        &code_lines("algo/kernel"),
        &banned,
    );
    for (path, a) in &algorithms {
        let own = format!("algo::{a}::");
        let others: Vec<&str> = banned.iter().copied().filter(|b| *b != own).collect();
        forbid(
            &format!(
                "src/{path} uses another algorithm only through the registry (algo::ALGORITHMS)"
            ),
            &code_lines(path),
            &others,
        );
    }
}

#[test]
fn only_the_output_crosses_from_the_algorithms_into_release_utility_and_report() {
    // Every module of src/algo but the seam (`output`) and the option values the report
    // lists (`options`).
    let mut banned: Vec<String> = std::fs::read_dir(root().join("src/algo"))
        .expect("read src/algo")
        .map(|e| {
            let p = e.expect("dir entry").path();
            p.file_stem().expect("named").to_string_lossy().to_string()
        })
        .filter(|m| !["mod", "output", "options"].contains(&m.as_str()))
        .map(|m| format!("algo::{m}::"))
        .collect();
    banned.sort();
    let banned: Vec<&str> = banned.iter().map(String::as_str).collect();
    for under in ["release", "utility.rs", "report.rs", "html.rs"] {
        forbid(
            &format!("src/{under} reads what an algorithm made through algo::output (and the report its options), never an algorithm or a kernel"),
            &code_lines(under),
            &banned,
        );
    }
}

#[test]
fn the_plan_does_not_know_the_algorithms() {
    forbid(
        "plan is upstream of algo (declarations -> plan -> forest -> algorithm): the algorithm checks its own options in algo::configure",
        &code_lines("plan"),
        &["crate::algo"],
    );
}

#[test]
fn the_binary_prints_through_writers_that_cannot_panic() {
    let mut lines = code_lines("cli");
    lines.extend(code_lines("main.rs"));
    forbid(
        "the binary prints with outln!, out! and errln! (main.rs), which drop what a closed or full stream cannot take instead of panicking",
        &lines,
        &["println!", "print!(", "eprint!("],
    );
}

#[test]
fn nothing_below_the_pipeline_imports_the_pipeline_cli_html_or_experiment() {
    let above = [
        "src/pipeline/",
        "src/cli/",
        "src/experiment/",
        "src/main.rs",
    ];
    let below: Vec<(String, usize, String)> = library_lines("")
        .into_iter()
        .filter(|(f, _, _)| !above.iter().any(|a| f.starts_with(a)))
        .collect();
    let (page, rest): (Vec<_>, Vec<_>) =
        below.into_iter().partition(|(f, _, _)| f == "src/html.rs");
    forbid(
        "data flows one way: only pipeline, cli and experiment sequence phases or draw experiment pages; nothing below them imports them (a signature of what relanon writes lives in outputs)",
        &rest,
        &["crate::pipeline", "crate::cli", "crate::html", "crate::experiment"],
    );
    forbid(
        "the report page reads a Report; the experiment pages live in experiment::pages",
        &page,
        &["crate::pipeline", "crate::cli", "crate::experiment"],
    );
}

#[test]
fn scratch_tables_are_registered_by_the_warehouse_only() {
    let outside: Vec<(String, usize, String)> = code_lines("")
        .into_iter()
        .filter(|(f, _, _)| !f.starts_with("src/warehouse/"))
        .collect();
    forbid(
        "tables are registered in a DataFusion session by warehouse only (Warehouse::temporary, warehouse::Scratch), so each is dropped when its phase is done",
        &outside,
        &["register_table", "deregister_table", "MemTable", "register_batch", "register_udf"],
    );
}

/// The module path (`["algo", "kernel", "search"]`) of a source file under src/.
fn module_of(file: &str) -> Vec<String> {
    let rel = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// Whether `path` (module components under src/) is a module: a file or a folder.
fn is_module(path: &[String]) -> bool {
    let base = root().join("src").join(path.join("/"));
    base.with_extension("rs").is_file() || base.join("mod.rs").is_file()
}

/// Every module path a line refers to (`crate::a::b::c`, `super::x`, `relanon::a` from the
/// binary), cut to its longest prefix that is a module.
fn referenced_modules(module: &[String], line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "relanon::"] {
        let mut from = 0;
        while let Some(i) = line[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            let before = line[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let tail: String = line[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut parts: Vec<String> = tail
                .split("::")
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
            let mut path: Vec<String> = match parts.first().map(String::as_str) {
                Some("crate") | Some("relanon") => Vec::new(),
                // `super` is the parent module (a mod.rs is its folder's module already).
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            parts.remove(0);
            for part in parts {
                let mut next = path.clone();
                next.push(part);
                if is_module(&next) {
                    path = next;
                } else {
                    break;
                }
            }
            out.push(path);
        }
    }
    out
}

/// Arrows between rooms: for every reference from module `a` to module `b`, the children of
/// their deepest common folder that hold each (`(folder, from, to, where)`), where both are
/// rooms of that folder (an arrow to a folder's own mod.rs is its face, not a room).
fn room_arrows() -> Vec<(String, String, String, String)> {
    let mut arrows = Vec::new();
    for (file, n, line) in library_lines("") {
        let module = module_of(&file);
        for target in referenced_modules(&module, &line) {
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= module.len() || common >= target.len() {
                continue;
            }
            arrows.push((
                module[..common].join("::"),
                module[common].clone(),
                target[common].clone(),
                format!("{file}:{n}"),
            ));
        }
    }
    arrows
}

#[test]
fn arrows_between_rooms_make_no_circle() {
    use std::collections::{BTreeMap, BTreeSet};
    let arrows = room_arrows();
    let mut graphs: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (folder, from, to, _) in &arrows {
        graphs
            .entry(folder)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    // The rooms each room reaches, per folder.
    let reaches = |graph: &BTreeMap<&str, BTreeSet<&str>>, start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = graph.get(start).into_iter().flatten().copied().collect();
        while let Some(r) = stack.pop() {
            if seen.insert(r.to_string()) {
                stack.extend(graph.get(r).into_iter().flatten());
            }
        }
        seen
    };
    let mut on_circles: Vec<String> = arrows
        .iter()
        .filter(|(folder, from, to, _)| reaches(&graphs[folder.as_str()], to).contains(from))
        .map(|(folder, from, to, at)| {
            let folder = if folder.is_empty() { "src" } else { folder };
            format!("in {folder}: {from} -> {to} ({at})")
        })
        .collect();
    on_circles.dedup();
    assert!(
        on_circles.is_empty(),
        "data flows one way: rooms that reach each other (directly or round a circle) are one concern split badly, or a lower one reaching up; move the shared piece down. Arrows on a circle:\n  {}",
        on_circles.join("\n  ")
    );
}

/// The non-test functions of src/ over 100 lines when this rule came in, with their length
/// then. The list may only shrink: a function on it may not grow, one split below 101 lines
/// leaves it, and no other function may pass 100 lines.
const LONG_FUNCTIONS: &[(&str, &str, usize)] = &[
    ("src/algo/clustree.rs", "cluster", 108),
    ("src/algo/negotiate.rs", "negotiate_partial", 114),
    ("src/experiment/anatomy.rs", "anatomy", 113),
    ("src/experiment/negotiation.rs", "negotiation", 113),
    ("src/experiment/pages.rs", "frontier_page", 111),
    ("src/warehouse/write.rs", "validate", 111),
];

/// (file, function, first line, lines) of every function in src/ outside tests, counted from
/// its `fn` line to its closing brace.
fn function_lengths() -> Vec<(String, String, usize, usize)> {
    let base = root();
    let mut out = Vec::new();
    for f in sources(&base.join("src")) {
        let name = f.strip_prefix(&base).unwrap_or(&f).display().to_string();
        if name.ends_with("/tests.rs") || name.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        let lines: Vec<&str> = text.lines().collect();
        let end = (0..lines.len())
            .find(|&i| {
                lines[i].trim() == "#[cfg(test)]"
                    && lines
                        .get(i + 1)
                        .is_some_and(|l| l.trim_start().starts_with("mod "))
            })
            .unwrap_or(lines.len());
        for i in 0..end {
            let Some(function) = fn_name(lines[i]) else {
                continue;
            };
            let Some(open) = (i..end).find(|&j| {
                let t = lines[j].trim_end();
                t.ends_with('{') || t.ends_with(';')
            }) else {
                continue;
            };
            if lines[open].trim_end().ends_with(';') {
                continue;
            }
            let indent = &lines[i][..lines[i].len() - lines[i].trim_start().len()];
            let close = format!("{indent}}}");
            if let Some(last) = (open + 1..end).find(|&k| lines[k] == close) {
                out.push((name.clone(), function, i + 1, last - i + 1));
            }
        }
    }
    out
}

/// The name of the function a line declares, if it declares one.
fn fn_name(line: &str) -> Option<String> {
    let mut t = line.trim_start();
    loop {
        let before = t;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "async ",
            "const ",
            "unsafe ",
        ] {
            t = t.strip_prefix(prefix).unwrap_or(t);
        }
        if t == before {
            break;
        }
    }
    let rest = t.strip_prefix("fn ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn functions_stay_short() {
    let lengths = function_lengths();
    let mut problems = Vec::new();
    for (file, function, line, n) in &lengths {
        if *n > 150 {
            problems.push(format!(
                "{file}:{line}: {function} is {n} lines; split it at its steps (none may pass 150)"
            ));
            continue;
        }
        if *n <= 100 {
            continue;
        }
        match LONG_FUNCTIONS
            .iter()
            .find(|(f, name, _)| f == file && name == function)
        {
            None => problems.push(format!(
                "{file}:{line}: {function} is {n} lines; split it at its steps (a function over 100 lines is a smell)"
            )),
            Some((_, _, listed)) if n > listed => problems.push(format!(
                "{file}:{line}: {function} grew from {listed} to {n} lines; the long-function list may only shrink"
            )),
            Some(_) => {}
        }
    }
    for (file, function, listed) in LONG_FUNCTIONS {
        let now = lengths
            .iter()
            .find(|(f, name, _, _)| f == file && name == function)
            .map(|l| l.3);
        if now.is_none_or(|n| n <= 100) {
            problems.push(format!(
                "{file}: {function} (listed at {listed} lines) is now {}: take it off LONG_FUNCTIONS",
                now.map_or("gone".to_string(), |n| format!("{n} lines"))
            ));
        }
    }
    assert!(
        LONG_FUNCTIONS.len() <= 20,
        "at most 20 functions may be over 100 lines"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
