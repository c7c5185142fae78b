//! The persisted annotated lattice (`relanon lattice --out FILE`): an open Parquet file that
//! pyarrow or DuckDB can read, its histograms in columns, one row per node, and what it was
//! built from ([`Meta`], with its [`Fingerprint`]) in the file's key-value metadata.
//!
//! Owns the layout ([`encode`], [`read`]), the lazy reader behind
//! [`crate::algo::kernel::annotate::HistogramSource`], the fingerprint of the inputs, and
//! the refusals of a file this relanon cannot read. Whether a file is relanon's at all is
//! [`crate::outputs`]'s signature ([`crate::outputs::LATTICE_KEY`]); when a lattice is built
//! and written is the pipeline's.

use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use twox_hash::XxHash64;

use crate::algo::kernel::annotate::{Annotated, HistogramRef};

mod read;
mod write;

#[cfg(test)]
mod tests;

pub use read::read;
pub use write::encode;

/// The layout version, the value of [`crate::outputs::LATTICE_KEY`]; other versions are
/// refused. Versions 1 and 2 were relanon's own binary layout.
pub const VERSION: u32 = 3;
/// The key-value metadata key holding [`Meta`] as JSON.
pub const META_KEY: &str = "relanon.meta";

/// The columns, one row per node (in [`Annotated::index`] order).
pub mod columns {
    /// The node's index: mixed radix over the columns' levels, the first column least
    /// significant.
    pub const NODE: &str = "node";
    /// The node's level per QI column, in `Meta::columns` order.
    pub const LEVELS: &str = "levels";
    /// Whether the node has histograms (false only for nodes a partial lattice skipped,
    /// whose measure columns are null).
    pub const COMPUTED: &str = "computed";
    /// The measures: by class size (k), and, when annotated, by distinct sensitive values (l).
    pub const MEASURES: [&str; 2] = ["size", "distinct"];
    /// Per measure (`size_classes`, ...): the node's classes.
    pub const CLASSES: &str = "classes";
    /// Per measure: the class measures that occur, ascending.
    pub const STATS: &str = "stats";
    /// Per measure: for i in 0..=len(stats) and each table t (`Meta::tables` order), at
    /// `i * tables + t`, the rows of table t in the classes measuring less than `stats[i]`
    /// (i = len(stats): every row); table 0 counts the entities.
    pub const CUM: &str = "cum";
    /// Per measure: a hash of the node's `stats` then `cum` (little-endian bytes, xxHash64),
    /// checked when the node is read.
    pub const HASH: &str = "hash";

    /// `size_stats`, ...
    pub fn of(measure: &str, what: &str) -> String {
        format!("{measure}_{what}")
    }
}

/// An annotated lattice and what it describes.
pub struct Built {
    pub lattice: Annotated,
    pub meta: Meta,
}

/// What a persisted lattice says about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub relanon_version: String,
    /// The entity table.
    pub entity: String,
    /// Family tables in plan order (the first is the entity table).
    pub tables: Vec<String>,
    pub rows: Vec<u64>,
    /// QI columns in lattice order.
    pub columns: Vec<ColumnMeta>,
    /// The entity table's sensitive columns, when the distinct measure is annotated.
    pub sensitive: Vec<String>,
    /// Why the distinct measure is not annotated, if it is not.
    pub no_distinct: Option<String>,
    /// The model the declarations ask for, as `k` or `l` and its value.
    pub declared: Declared,
    pub fingerprint: Fingerprint,
    /// Seconds the annotation took.
    pub build_seconds: f64,
    /// For a partial lattice, the share of each height's nodes annotated.
    #[serde(default)]
    pub partial: Option<f64>,
}

/// A QI column of the lattice.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnMeta {
    /// `table.column`.
    pub name: String,
    pub hierarchy: String,
    /// Levels run 0..=height.
    pub height: u16,
    /// The column's cells (its table's rows in the family).
    #[serde(default)]
    pub cells: u64,
    /// Per level: distinct released labels in the family, and one generalized label (never a
    /// leaf, which may be a person's own value).
    pub levels: Vec<LevelMeta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelMeta {
    pub labels: u64,
    pub example: Option<String>,
    /// LM' summed over the column's cells at this level.
    #[serde(default)]
    pub loss: f64,
}

/// The declarations' model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Declared {
    /// `k` or `l`.
    pub measure: String,
    pub value: u32,
    /// `probabilistic` or `distinct` for l-diversity.
    pub diversity: Option<String>,
}

/// What a lattice was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Hash of the declarations text.
    pub declarations: String,
    /// The source, absolute.
    pub source: PathBuf,
    /// Each file read (source files, hierarchy files), absolute, with its content hash.
    pub inputs: Vec<(PathBuf, String)>,
}

/// Why a lattice file cannot be written or read. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LatticeFileError {
    #[error("cannot read '{path}'")]
    Input {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the lattice '{path}'")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("'{path}' is not a lattice relanon can read ({what}); rebuild it with `relanon lattice <declarations> --out {path}`")]
    Unreadable { path: PathBuf, what: String },
    #[error(
        "cannot lay out the lattice as Parquet ({0}); this is a bug in relanon, please report it"
    )]
    Encode(String),
}

impl Fingerprint {
    /// Hashes the declarations text and every input (a directory: each file below it, by
    /// relative path, in order).
    pub fn of(
        declarations: &str,
        source: &Path,
        inputs: &[PathBuf],
    ) -> Result<Fingerprint, LatticeFileError> {
        let mut hashed = Vec::new();
        for input in inputs {
            for file in files_under(input)? {
                let hash = hash_file(&file)?;
                hashed.push((std::path::absolute(&file).unwrap_or(file), hash));
            }
        }
        Ok(Fingerprint {
            declarations: hash_text(declarations),
            source: std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf()),
            inputs: hashed,
        })
    }

    /// Whether `text` is the declarations the lattice was built from.
    pub fn same_declarations(&self, text: &str) -> bool {
        hash_text(text) == self.declarations
    }

    /// An input added, removed or changed since the lattice was built (a file that cannot
    /// be read counts as changed), or `None` when every input is as it was.
    pub fn changed_input(&self) -> Option<PathBuf> {
        let mut now = Vec::new();
        let mut roots = vec![self.source.clone()];
        roots.extend(
            self.inputs
                .iter()
                .map(|(p, _)| p.clone())
                .filter(|p| !p.starts_with(&self.source)),
        );
        for root in &roots {
            for file in files_under(root).unwrap_or_default() {
                let hash = hash_file(&file).unwrap_or_default();
                now.push((std::path::absolute(&file).unwrap_or(file), hash));
            }
        }
        now.sort();
        let mut then = self.inputs.clone();
        then.sort();
        if now == then {
            return None;
        }
        let changed = then
            .iter()
            .find(|x| !now.contains(x))
            .or_else(|| now.iter().find(|x| !then.contains(x)))
            .map(|(p, _)| p.clone())
            .unwrap_or_default();
        Some(changed)
    }
}

fn hash_text(text: &str) -> String {
    hex(XxHash64::oneshot(0, text.as_bytes()))
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

/// A file, or every file under a directory, sorted.
fn files_under(path: &Path) -> Result<Vec<PathBuf>, LatticeFileError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let unreadable = |source| LatticeFileError::Input {
        path: path.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(unreadable)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(unreadable)?;
    entries.sort();
    for e in entries {
        out.extend(files_under(&e)?);
    }
    Ok(out)
}

fn hash_file(path: &Path) -> Result<String, LatticeFileError> {
    let unreadable = |source| LatticeFileError::Input {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let mut hasher = XxHash64::with_seed(0);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        hasher.write(&buf[..n]);
    }
    Ok(hex(hasher.finish()))
}

/// A node's histogram hashed as its little-endian bytes (the `hash` columns).
fn node_hash(h: HistogramRef) -> u64 {
    let mut hasher = XxHash64::with_seed(0);
    for x in h.stats {
        hasher.write(&x.to_le_bytes());
    }
    for x in h.cum {
        hasher.write(&x.to_le_bytes());
    }
    hasher.finish()
}

/// Nodes per row group: a request reads the row groups of the nodes its search visits, a
/// few hundred nodes scattered over the lattice, so groups are small; but every group adds
/// to the footer read when the file is opened, so a large lattice has larger ones.
fn group_nodes(nodes: usize) -> usize {
    (nodes / 256).clamp(64, 4096)
}
