//! Where a run may write. Every path a command writes (the release, its report.json, the key
//! map, an HTML page) is checked before any work is done against the files the run reads
//! (the source, the declarations, hierarchy files) and against each other; an existing file
//! is replaced only with `--overwrite`, and only if it is something relanon wrote (a release
//! with its report, a report, a key map, a page relanon drew, a lattice). Anything else is the
//! user's, and relanon refuses to touch it. The signatures of what relanon writes are defined
//! here (a lattice's: [`LATTICE_KEY`]).

use std::path::{Path, PathBuf};

use crate::warehouse::TargetKind;

/// The first line of a declarations file `init` wrote (its signature: `--overwrite` only
/// replaces such a file).
pub const DECLARATIONS_HEADER: &str = "-- Declarations proposed by relanon init.";

/// How a page relanon drew names its maker (`html::page` writes it in every page's head).
pub const PAGE_GENERATOR: &str = "<meta name=\"generator\" content=\"relanon\">";

/// What kind of file an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A release: a SQLite file or a Parquet directory, with its report.json.
    Release,
    /// report.json beside (or inside) a release.
    ReportJson,
    /// The released -> source key map.
    KeyMap,
    /// An HTML page drawn by `report`, `anonymize --report` or `experiment --html`.
    Page,
    /// A declarations file written by `init`.
    Declarations,
    /// A hierarchy file `init` wrote beside its declarations (`<stem>-hierarchies/`).
    HierarchyFile,
    /// An annotated lattice `relanon lattice` wrote.
    Lattice,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Release => "release",
            Kind::ReportJson => "report.json",
            Kind::KeyMap => "key map",
            Kind::Page => "report page",
            Kind::Declarations => "declarations file",
            Kind::HierarchyFile => "hierarchy file",
            Kind::Lattice => "lattice",
        }
    }
}

/// One path a run will write.
#[derive(Debug, Clone)]
pub struct Output {
    pub kind: Kind,
    pub path: PathBuf,
    /// The option that chose it, for messages (`--key-map`, `SET target`, ...).
    pub option: &'static str,
}

/// One path a run reads.
#[derive(Debug, Clone)]
pub struct Input {
    pub path: PathBuf,
    /// What it is, for messages (`the source`, `the declarations`, ...).
    pub what: &'static str,
}

/// Why an output path is refused. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{option} '{path}' is {what} (or inside it); choose another path: relanon never writes over what it reads")]
    IsInput {
        option: &'static str,
        path: PathBuf,
        what: &'static str,
    },
    #[error("{option} '{path}' would hold {what} '{input}'; choose a path that does not contain what relanon reads")]
    HoldsInput {
        option: &'static str,
        path: PathBuf,
        what: &'static str,
        input: PathBuf,
    },
    #[error("{option} '{path}' is also where the {other} goes; give each output its own path")]
    Clash {
        option: &'static str,
        path: PathBuf,
        other: &'static str,
    },
    #[error("{option} '{path}' exists: pass --overwrite to replace it")]
    Exists { option: &'static str, path: PathBuf },
    #[error("{option} '{path}' exists and is not a {kind} relanon wrote; relanon replaces only its own files: move it away or choose another path")]
    NotOurs {
        option: &'static str,
        path: PathBuf,
        kind: &'static str,
    },
}

/// Checks `outputs` against `inputs`, each other, and what exists at each path.
pub fn check(outputs: &[Output], inputs: &[Input], overwrite: bool) -> Result<(), OutputError> {
    for (i, o) in outputs.iter().enumerate() {
        let at = absolute(&o.path);
        for input in inputs {
            let read = absolute(&input.path);
            if at == read || at.starts_with(&read) {
                return Err(OutputError::IsInput {
                    option: o.option,
                    path: o.path.clone(),
                    what: input.what,
                });
            }
            if read.starts_with(&at) {
                return Err(OutputError::HoldsInput {
                    option: o.option,
                    path: o.path.clone(),
                    what: input.what,
                    input: input.path.clone(),
                });
            }
        }
        for other in &outputs[..i] {
            if absolute(&other.path) == at {
                return Err(OutputError::Clash {
                    option: o.option,
                    path: o.path.clone(),
                    other: other.kind.name(),
                });
            }
        }
        if o.path.exists() {
            if !overwrite {
                return Err(OutputError::Exists {
                    option: o.option,
                    path: o.path.clone(),
                });
            }
            if !is_ours(o.kind, &o.path) {
                return Err(OutputError::NotOurs {
                    option: o.option,
                    path: o.path.clone(),
                    kind: o.kind.name(),
                });
            }
        }
    }
    Ok(())
}

/// Whether the file at `path` is a `kind` relanon wrote: recognized by its content, never
/// by its name alone.
pub fn is_ours(kind: Kind, path: &Path) -> bool {
    match kind {
        Kind::Release => {
            let report = report_path(path);
            report.is_file() && is_ours(Kind::ReportJson, &report)
        }
        Kind::ReportJson => json_object(path).is_some_and(|v| v.get("relanon_version").is_some()),
        Kind::KeyMap => std::fs::File::open(path).ok().is_some_and(|f| {
            serde_json::from_reader::<_, crate::keymap::KeyMap>(std::io::BufReader::new(f)).is_ok()
        }),
        Kind::Page => std::fs::read_to_string(path)
            .ok()
            .is_some_and(|t| t.starts_with("<!DOCTYPE html>") && t.contains(PAGE_GENERATOR)),
        Kind::Lattice => is_lattice(path),
        Kind::Declarations => std::fs::read_to_string(path)
            .ok()
            .is_some_and(|t| t.starts_with(DECLARATIONS_HEADER)),
        // A CSV cell cannot say who wrote it: the file is init's when the declarations it
        // sits beside (`<stem>-hierarchies/` beside `<stem>.sql` or `<stem>.decl.sql`) are
        // init's and read it.
        Kind::HierarchyFile => {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                return false;
            };
            let Some(stem) = dir
                .file_name()
                .and_then(|d| d.to_str())
                .and_then(|d| d.strip_suffix("-hierarchies"))
            else {
                return false;
            };
            let beside = dir.parent().unwrap_or(Path::new(""));
            let named = format!("{stem}-hierarchies/{}", name.to_string_lossy());
            [format!("{stem}.sql"), format!("{stem}.decl.sql")]
                .iter()
                .map(|d| beside.join(d))
                .any(|d| {
                    is_ours(Kind::Declarations, &d)
                        && std::fs::read_to_string(&d).is_ok_and(|t| t.contains(&named))
                })
        }
    }
}

/// The signature of a lattice `relanon lattice` writes: a Parquet file (starting with
/// [`PARQUET_MAGIC`]) whose key-value metadata holds this key, valued the format version.
pub const LATTICE_KEY: &str = "relanon.lattice";
/// The first bytes of a Parquet file.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";
/// The first bytes of a lattice relanon wrote in its earlier binary layout (format versions
/// 1 and 2): still relanon's, so `--overwrite` replaces it.
pub const LATTICE_BINARY_MAGIC: &[u8; 16] = b"relanon lattice\n";

/// Whether `path` is a lattice relanon wrote, of any format version.
fn is_lattice(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = [0u8; 16];
    if file.read_exact(&mut head).is_err() {
        return false;
    }
    if &head == LATTICE_BINARY_MAGIC {
        return true;
    }
    head.starts_with(PARQUET_MAGIC)
        && parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .is_ok_and(|m| {
                m.file_metadata()
                    .key_value_metadata()
                    .is_some_and(|kv| kv.iter().any(|e| e.key == LATTICE_KEY))
            })
}

fn json_object(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .filter(serde_json::Value::is_object)
}

/// Where report.json goes: inside a Parquet release directory, beside a SQLite file.
pub fn report_path(target: &Path) -> PathBuf {
    match TargetKind::of(target) {
        TargetKind::Parquet => target.join("report.json"),
        TargetKind::Sqlite => target.with_extension("report.json"),
    }
}

/// Best-effort absolute form of a path that may not exist yet (symbolic links resolved
/// where the path exists).
pub fn absolute(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => absolute(parent).join(name),
        _ => std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(kind: Kind, path: &Path, option: &'static str) -> Output {
        Output {
            kind,
            path: path.to_path_buf(),
            option,
        }
    }

    #[test]
    fn an_output_on_or_around_an_input_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("src.sqlite");
        let decl = dir.path().join("decl.sql");
        std::fs::write(&src, "x").expect("write");
        std::fs::write(&decl, "x").expect("write");
        let inputs = [
            Input {
                path: src.clone(),
                what: "the source",
            },
            Input {
                path: decl.clone(),
                what: "the declarations",
            },
        ];
        for (path, says) in [(&src, "is the source"), (&decl, "is the declarations")] {
            let e =
                check(&[out(Kind::KeyMap, path, "--key-map")], &inputs, true).expect_err("refused");
            assert!(e.to_string().contains(says), "{e}");
        }
        let e = check(&[out(Kind::Release, dir.path(), "--target")], &inputs, true)
            .expect_err("refused");
        assert!(e.to_string().contains("would hold the source"), "{e}");
    }

    #[test]
    fn existing_files_are_replaced_only_with_overwrite_and_only_if_relanon_wrote_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let km = dir.path().join("keys.json");
        std::fs::write(&km, r#"{"tables": {}}"#).expect("write");
        let e = check(&[out(Kind::KeyMap, &km, "--key-map")], &[], false).expect_err("exists");
        assert!(e.to_string().contains("pass --overwrite"), "{e}");
        check(&[out(Kind::KeyMap, &km, "--key-map")], &[], true).expect("a key map");
        let notes = dir.path().join("notes.json");
        std::fs::write(&notes, r#"["mine"]"#).expect("write");
        let e = check(&[out(Kind::KeyMap, &notes, "--key-map")], &[], true).expect_err("not ours");
        assert!(
            e.to_string().contains("is not a key map relanon wrote"),
            "{e}"
        );
        let page = dir.path().join("p.html");
        std::fs::write(&page, "<!DOCTYPE html><p>mine</p>").expect("write");
        let e = check(&[out(Kind::Page, &page, "--report")], &[], true).expect_err("not ours");
        assert!(e.to_string().contains("is not a report page"), "{e}");
        let drawn = format!("<!DOCTYPE html>\n<html>\n<head>\n{PAGE_GENERATOR}\n</head></html>\n");
        std::fs::write(&page, drawn).expect("write");
        check(&[out(Kind::Page, &page, "--report")], &[], true).expect("a page redrawn");
    }

    #[test]
    fn two_outputs_on_one_path_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("r.sqlite");
        let e = check(
            &[
                out(Kind::Release, &p, "SET target"),
                out(Kind::Page, &p, "--report"),
            ],
            &[],
            true,
        )
        .expect_err("clash");
        assert!(e.to_string().contains("also where the release goes"), "{e}");
    }
}
