//! `init` end to end: open the source, propose declarations, write them as text, and check
//! that the text plans against the source exactly as written before anything is written.

use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, Result};

use super::{prepare, Request};
use crate::init::{self, Options, Proposal};
use crate::progress::Progress;
use crate::warehouse::{SourceKind, SourceOptions, Warehouse};

/// What `init` produced: the declarations and their hierarchy files (paths as they will be
/// written), checked to plan.
pub struct Initialized {
    pub text: String,
    pub files: Vec<(PathBuf, String)>,
    pub proposal: Proposal,
}

/// Proposes declarations for `source`, to be written at `out`.
pub async fn init(
    source: &Path,
    out: &Path,
    options: &Options,
    source_options: &SourceOptions,
    progress: &Progress,
) -> Result<Initialized> {
    progress.phase("load", "opening the source");
    let mut wh = Warehouse::open_with(source, source_options).await?;
    for w in wh.warnings() {
        progress.warn(w.clone());
    }
    progress.phase("load", "reading the schema and the values");
    let proposal = init::propose(&mut wh, options).await?;
    let kind = wh.kind;
    drop(wh);
    let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "declarations".into());
    let stem = stem.strip_suffix(".decl").unwrap_or(&stem).to_string();
    let source_stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "source".into());
    // A release in the source's own kind: a SQLite file, or a Parquet directory for files.
    let target = match kind {
        SourceKind::Sqlite => format!("{source_stem}-release.sqlite"),
        SourceKind::Parquet | SourceKind::Csv => format!("{source_stem}-release"),
    };
    let files_dir = format!("{stem}-hierarchies");
    let mut settings = Vec::new();
    if source_options.csv_delimiter != SourceOptions::default().csv_delimiter {
        let d = match source_options.csv_delimiter {
            b'\t' => "tab".to_string(),
            b => (b as char).to_string(),
        };
        settings.push(("csv_delimiter".to_string(), d));
    }
    let written = init::render(
        &proposal,
        &relative(source, &dir),
        &target,
        &files_dir,
        &settings,
    );
    // The same declarations with the source as an absolute path, planned from a scratch
    // directory that holds the hierarchy files: what the owner will run, checked now.
    progress.phase("load", "checking that the proposal plans");
    let scratch =
        tempfile::tempdir().map_err(|e| anyhow!("cannot create a scratch directory: {e}"))?;
    let checked = init::render(
        &proposal,
        &crate::outputs::absolute(source).display().to_string(),
        &scratch.path().join(&target).display().to_string(),
        &files_dir,
        &settings,
    );
    for (path, content) in &checked.files {
        let at = scratch.path().join(path);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&at, content)?;
    }
    let req = Request {
        text: checked.text,
        base: scratch.path().to_path_buf(),
        origin: out.display().to_string(),
        ..Request::default()
    };
    prepare(&req, &Progress::new()).await.map_err(|e| {
        anyhow!("the proposed declarations do not plan, which is a defect of init; please report it with the schema: {e:#}")
    })?;
    Ok(Initialized {
        text: written.text,
        files: written
            .files
            .into_iter()
            .map(|(p, c)| (dir.join(p), c))
            .collect(),
        proposal,
    })
}

/// `path` as written from `dir` (both made absolute): `../data/shop.sqlite`. A path with no
/// common root with `dir` stays absolute.
fn relative(path: &Path, dir: &Path) -> String {
    let path = crate::outputs::absolute(path);
    let dir = crate::outputs::absolute(dir);
    let (p, d): (Vec<Component>, Vec<Component>) =
        (path.components().collect(), dir.components().collect());
    let common = p.iter().zip(&d).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return path.display().to_string();
    }
    let mut rel = PathBuf::new();
    for _ in common..d.len() {
        rel.push("..");
    }
    for c in &p[common..] {
        rel.push(c.as_os_str());
    }
    rel.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_from_the_declarations_directory() {
        assert_eq!(
            relative(Path::new("/a/b/shop.sqlite"), Path::new("/a/b")),
            "shop.sqlite"
        );
        assert_eq!(
            relative(Path::new("/a/data/shop.sqlite"), Path::new("/a/b")),
            "../data/shop.sqlite"
        );
        assert_eq!(
            relative(Path::new("/a/b/c/x.csv"), Path::new("/a/b")),
            "c/x.csv"
        );
    }
}
