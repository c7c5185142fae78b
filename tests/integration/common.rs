//! Shared helpers: running the binary, fixture paths, hashing a tree to prove it unchanged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// Runs `relanon` with `args` in `dir`.
pub fn relanon(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relanon"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the relanon binary runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Copies a directory of files (one level) into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("dir entry");
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy fixture");
        }
    }
}

/// A cheap fingerprint of every file under `p` (names, sizes, bytes), to prove a source untouched.
pub fn fingerprint(p: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if p.is_file() {
        out.push((
            p.display().to_string(),
            std::fs::read(p).expect("read file"),
        ));
    } else if p.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(p)
            .expect("read dir")
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            out.extend(fingerprint(&e.path()));
        }
    }
    out
}

/// The Table II declarations (001 Table II / Fig. 1) over a copy of the CSV fixture in `dir`.
pub const TABLE2_DECL: &str = include_str!("../../sql/table2.sql");

/// Sets up `dir` with `table2/` (the fixture copy) and `decl.sql` = `text`; returns decl path.
pub fn table2_workspace(dir: &Path, text: &str) -> PathBuf {
    copy_dir(&fixture("table2"), &dir.join("table2"));
    let decl = dir.join("decl.sql");
    std::fs::write(&decl, text).expect("write declarations");
    decl
}

/// Table II declarations with the source and target pointed into the workspace.
pub fn table2_text() -> String {
    in_workspace(TABLE2_DECL, "table2")
}

/// 003's Table 1 declarations (one table of nine people, `algorithm = 'hybrid'`).
pub const TABLE1_DECL: &str = include_str!("../../sql/table1.sql");

/// Table 1 declarations with the source (`table1/`, a copy of the fixture) and the target
/// (`release.sqlite`) in the workspace.
pub fn table1_text() -> String {
    in_workspace(TABLE1_DECL, "table1")
}

/// `decl` with `SET source` pointed at the workspace's `source` and the target at
/// `release.sqlite`.
fn in_workspace(decl: &str, source: &str) -> String {
    let mut out = Vec::new();
    for line in decl.lines() {
        let l = line.trim_start().to_ascii_lowercase();
        if l.starts_with("set source") {
            out.push(format!("SET source = '{source}';"));
        } else if l.starts_with("set target") {
            out.push("SET target = 'release.sqlite';".to_string());
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

/// The first column of every row `sql` returns.
pub fn column<T: rusqlite::types::FromSql>(db: &rusqlite::Connection, sql: &str) -> Vec<T> {
    let mut stmt = db.prepare(sql).expect("query prepares");
    let rows = stmt.query_map([], |r| r.get(0)).expect("query runs");
    rows.map(|r| r.expect("row reads")).collect()
}

/// Sets up a Table II workspace in `dir` with declarations `text` and runs `anonymize` with
/// `extra` arguments; does not judge the outcome.
pub fn anonymize_table2(dir: &Path, text: &str, extra: &[&str]) -> Output {
    let decl = table2_workspace(dir, text);
    let mut args = vec!["anonymize", decl.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    relanon(dir, &args)
}

/// [`anonymize_table2`] with a key map (`keys.json`), asserting it succeeded.
pub fn anonymize_table2_with_key_map(dir: &Path, text: &str) -> Output {
    let o = anonymize_table2(dir, text, &["--key-map", "keys.json"]);
    assert!(o.status.success(), "anonymize failed: {}", stderr(&o));
    o
}

/// Runs `relanon attack decl.sql` in `dir` with `extra` arguments and one `--fact` per entry
/// of `facts`.
pub fn attack_facts(dir: &Path, facts: &[&str], extra: &[&str]) -> Output {
    let mut args = vec!["attack", "decl.sql"];
    args.extend_from_slice(extra);
    for fact in facts {
        args.extend(["--fact", fact]);
    }
    relanon(dir, &args)
}

/// `relanon anonymize decl --source S --target T` in `dir`, writing the key map `keys.json` and
/// printing the report as JSON; does not judge the outcome.
pub fn anonymize_with_key_map(dir: &Path, decl: &str, source: &str, target: &str) -> Output {
    relanon(
        dir,
        &[
            "anonymize",
            decl,
            "--source",
            source,
            "--target",
            target,
            "--key-map",
            "keys.json",
            "--overwrite",
            "--json",
        ],
    )
}

/// `relanon verify decl --source S --release R` in `dir` with the key map `keys.json`.
pub fn verify_with_key_map(dir: &Path, decl: &str, source: &str, release: &str) -> Output {
    relanon(
        dir,
        &[
            "verify",
            decl,
            "--source",
            source,
            "--release",
            release,
            "--key-map",
            "keys.json",
        ],
    )
}

/// Builds `<name>.sqlite` in `dir` from the script fixtures/realworld/`<name>`.sql (and the
/// `extra` scripts there after it), and copies the fixture's declarations `<decl>.decl.sql`
/// beside it; returns the declarations' path. A source built before is reused.
pub fn realworld_workspace(dir: &Path, name: &str, decl: &str, extra: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.sqlite"));
    if !source.exists() {
        let db = rusqlite::Connection::open(&source).expect("create");
        let scripts = std::iter::once(name).chain(extra.iter().copied());
        for script in scripts {
            let text = std::fs::read_to_string(fixture(&format!("realworld/{script}.sql")))
                .expect("read fixture script");
            db.execute_batch(&text).expect("run fixture script");
        }
    }
    let decl_text = std::fs::read_to_string(fixture(&format!("realworld/{decl}.decl.sql")))
        .expect("read declarations");
    let path = dir.join(format!("{decl}.decl.sql"));
    std::fs::write(&path, decl_text).expect("write declarations");
    path
}
