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
    for under in ["algo", "release.rs"] {
        forbid(
            &format!("src/{under} does no I/O and knows no SQL (algorithms get a Forest, the release an algo::Output)"),
            &code_lines(under),
            &banned,
        );
    }
}

#[test]
fn datafusion_sessions_are_made_in_the_warehouse_only() {
    let outside: Vec<(String, usize, String)> = code_lines("")
        .into_iter()
        .filter(|(f, _, _)| !f.starts_with("src/warehouse/"))
        .collect();
    forbid(
        "DataFusion sessions are made by warehouse::session only (one set of settings: identifiers keep their case, strings stay Utf8)",
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

#[test]
fn kernels_know_no_algorithm_and_algorithms_reach_each_other_only_through_the_registry() {
    let algorithms = ["miracle", "clustree", "dmiracle", "topdown", "baseline"];
    let banned: Vec<String> = algorithms.iter().map(|a| format!("algo::{a}")).collect();
    let banned: Vec<&str> = banned.iter().map(String::as_str).collect();
    forbid(
        "algo/kernel is shared by the algorithms and names none of them",
        &code_lines("algo/kernel"),
        &banned,
    );
    for a in algorithms {
        let others: Vec<&str> = banned
            .iter()
            .copied()
            .filter(|b| *b != format!("algo::{a}"))
            .collect();
        let path = if a == "baseline" {
            "algo/baseline".to_string()
        } else {
            format!("algo/{a}.rs")
        };
        forbid(
            &format!(
                "src/{path} uses another algorithm only through the registry (algo::ALGORITHMS)"
            ),
            &code_lines(&path),
            &others,
        );
    }
}

#[test]
fn only_the_output_crosses_from_the_algorithms_into_release_utility_and_report() {
    for under in ["release.rs", "utility.rs", "report.rs", "html.rs"] {
        let lines: Vec<(String, usize, String)> = code_lines(under)
            .into_iter()
            .filter(|(_, _, l)| l.contains("crate::algo::"))
            .collect();
        forbid(
            &format!("src/{under} reads what an algorithm made through algo::Output (and the report its options), never an algorithm or a kernel"),
            &lines,
            &["algo::kernel", "algo::miracle", "algo::clustree", "algo::dmiracle", "algo::topdown", "algo::baseline"],
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
