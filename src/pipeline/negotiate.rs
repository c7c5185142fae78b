//! `relanon lattice` and `relanon negotiate`: the annotated lattice of a warehouse built
//! (declarations -> plan -> forest -> [`annotate`]), persisted with a fingerprint of what it
//! was built from, and requests answered over it ([`negotiate`]).
//!
//! A persisted lattice is refused when its declarations, source or hierarchy files changed
//! since it was built (their contents are hashed), or when it was written by another format
//! version: answers over stale histograms would promise suppressions the data no longer has.

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use twox_hash::XxHash64;

use super::{load, prepare, source_of, Request};
use crate::algo::kernel::annotate::{
    annotate, estimated_work, tree_rows, Annotated, Histogram, HistogramRef, HistogramSource,
    Histograms, Measure, Source,
};
use crate::algo::kernel::lattice::Lattice;
use crate::algo::kernel::partial::{annotate_partial, node_histograms};
use crate::algo::negotiate::{negotiate, negotiate_partial, Answer, Relaxed, Request as Query};
use crate::outputs::{self, Input, Kind, Output};
use crate::plan::{Diversity, Model};
use crate::progress::Progress;
use crate::warehouse::staging;

/// The first bytes of a persisted lattice.
pub const MAGIC: &[u8; 16] = b"relanon lattice\n";
/// Bumped whenever the layout changes; other versions are refused.
const VERSION: u32 = 2;
/// The most nodes annotated in full (memory: one histogram each).
pub const NODE_LIMIT: usize = 1_000_000;
/// The most row visits an annotation may take (a few minutes on two cores).
pub const WORK_LIMIT: f64 = 2e10;
/// The most nodes a partial lattice scores (its estimator is computed for every node).
pub const PARTIAL_NODE_LIMIT: usize = 20_000_000;

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
    /// Hash of the index (class counts, layout, each node's hash), so a damaged file is
    /// refused; each node's histogram is checked against its own hash when it is read.
    pub index_hash: String,
    /// Bytes of the index, which the histograms follow.
    pub index_len: u64,
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

/// Builds the annotated lattice of the declarations' warehouse.
/// With `partial` (a share in (0, 1]), only that share of each height's nodes is annotated
/// (002 Ch. 5).
pub async fn build(req: &Request, partial: Option<f64>, progress: &Progress) -> Result<Built> {
    let started = Instant::now();
    let (plan, _, wh) = prepare(req, progress).await?;
    if plan.params.model.anatomy().is_some() {
        bail!("the lattice generalizes QI values, and the declarations ask for model = 'anatomy', which publishes them exactly; negotiate a k-anonymity or l-diversity model (or anonymize with the anatomy as declared)");
    }
    let forest = load(&plan, &wh, progress).await?;
    let lattice = Lattice::new(&forest);
    let shape = lattice
        .columns
        .iter()
        .map(|c| (c.height + 1).to_string())
        .collect::<Vec<_>>()
        .join(" x ");
    let nodes: f64 = lattice
        .columns
        .iter()
        .map(|c| c.height as f64 + 1.0)
        .product();
    let rows: usize = forest.tables.iter().map(|t| t.rows()).sum();
    let heights_sum: f64 = lattice.columns.iter().map(|c| c.height as f64).sum();
    // A partial lattice computes each chosen node on its own: one pass over the rows each,
    // about p of the nodes (at least two per height) plus one axis node per column level.
    let partial_work = |p: f64| {
        let axes: f64 = lattice.columns.iter().map(|c| c.height as f64 + 1.0).sum();
        ((p * nodes).max(2.0 * (heights_sum + 1.0)).min(nodes) + axes) * rows as f64
    };
    match partial {
        None => {
            let work = estimated_work(&lattice);
            if nodes > NODE_LIMIT as f64 || work > WORK_LIMIT {
                let offer = if nodes <= PARTIAL_NODE_LIMIT as f64
                    && partial_work(0.05) <= WORK_LIMIT
                {
                    format!(", or annotate part of it with --partial 5% (about {:.0} nodes, {:.1e} row visits)", (0.05 * nodes).max(2.0 * (heights_sum + 1.0)).min(nodes), partial_work(0.05))
                } else {
                    String::new()
                };
                bail!(
                    "the lattice of the {} QI column(s) has {nodes:.0} nodes ({shape} levels); annotating every node would take about {work:.1e} row visits over {rows} family rows, more than the {WORK_LIMIT:.0e} (or {NODE_LIMIT} nodes) relanon annotates; declare fewer quasi-identifiers or hierarchies with fewer levels{offer}, or let `anonymize` with algorithm = 'lattice' search it with pruning",
                    lattice.columns.len(),
                );
            }
        }
        Some(p) => {
            if nodes > PARTIAL_NODE_LIMIT as f64 || partial_work(p) > WORK_LIMIT {
                bail!(
                    "the lattice of the {} QI column(s) has {nodes:.0} nodes ({shape} levels); annotating {:.1}% of them would take about {:.1e} row visits over {rows} family rows, more than the {WORK_LIMIT:.0e} (or {PARTIAL_NODE_LIMIT} nodes) relanon annotates; declare fewer quasi-identifiers or hierarchies with fewer levels, or a smaller share",
                    lattice.columns.len(),
                    p * 100.0,
                    partial_work(p)
                );
            }
        }
    }
    let below = plan.sensitive_below_entity();
    let sensitive: Vec<String> = forest.tables[0]
        .sensitive
        .iter()
        .map(|s| s.column.clone())
        .collect();
    let no_distinct = if !below.is_empty() {
        Some(format!("{} is sensitive and lies below the entity table; l is measured on the entity table's sensitive columns only", below.join(", ")))
    } else if sensitive.is_empty() {
        Some(format!(
            "the entity table {} has no SENSITIVE column",
            plan.tables[0].name
        ))
    } else {
        None
    };
    progress.phase("cluster", "annotating the lattice");
    let annotated = match partial {
        None => annotate(&lattice, no_distinct.is_none(), progress),
        Some(p) => annotate_partial(&lattice, no_distinct.is_none(), p, progress),
    };
    let columns = column_meta(&plan, &lattice);
    let declared = match plan.params.model.clone() {
        Model::Anatomy { .. } => {
            bail!("anatomy has no lattice; negotiate a k-anonymity or l-diversity model")
        }
        Model::KAnonymity { k } => Declared {
            measure: "k".into(),
            value: k as u32,
            diversity: None,
        },
        Model::LDiversity { l, diversity } => Declared {
            measure: "l".into(),
            value: l as u32,
            diversity: Some(
                match diversity {
                    Diversity::Probabilistic => "probabilistic",
                    Diversity::Distinct => "distinct",
                }
                .into(),
            ),
        },
    };
    let mut inputs = vec![plan.source.clone()];
    inputs.extend(plan.hierarchy_files.iter().cloned());
    let fingerprint = fingerprint(req, &plan.source, &inputs)?;
    let meta = Meta {
        relanon_version: env!("CARGO_PKG_VERSION").to_string(),
        entity: plan.entity.clone(),
        tables: plan.tables.iter().map(|t| t.name.clone()).collect(),
        rows: annotated.rows.clone(),
        columns,
        sensitive: if no_distinct.is_none() {
            sensitive
        } else {
            Vec::new()
        },
        no_distinct,
        declared,
        fingerprint,
        build_seconds: started.elapsed().as_secs_f64(),
        partial,
        index_hash: String::new(),
        index_len: 0,
    };
    Ok(Built {
        lattice: annotated,
        meta,
    })
}

/// Each lattice column's name, hierarchy and what its levels release.
fn column_meta(plan: &crate::plan::Plan, lattice: &Lattice) -> Vec<ColumnMeta> {
    let forest = lattice.forest();
    let mut out = Vec::new();
    for (t, (ft, table)) in plan.tables.iter().zip(&forest.tables).enumerate() {
        for ((q, (name, _)), &c) in ft.qi_columns().enumerate().zip(lattice.columns_of(t)) {
            let h = &table.hierarchies[q];
            let height = lattice.columns[c].height;
            let levels = (0..=height)
                .map(|level| {
                    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
                    let mut generalized: BTreeMap<u32, u64> = BTreeMap::new();
                    for r in 0..table.rows() {
                        let leaf = table.qi[r * table.nqi() + q];
                        let g = lattice.generalize(c, level, leaf);
                        *counts.entry(g).or_insert(0) += 1;
                        if g != leaf {
                            *generalized.entry(g).or_insert(0) += 1;
                        }
                    }
                    let example = generalized
                        .iter()
                        .max_by_key(|(&g, &n)| (n, std::cmp::Reverse(g)))
                        .and_then(|(&g, _)| h.label(g).map(str::to_string));
                    LevelMeta {
                        labels: counts.len() as u64,
                        example,
                        loss: lattice.level_loss(c, level),
                    }
                })
                .collect();
            out.push(ColumnMeta {
                name: format!("{}.{name}", ft.name),
                hierarchy: h.name().to_string(),
                height,
                cells: table.rows() as u64,
                levels,
            });
        }
    }
    out
}

/// Hashes the declarations text and every input (a directory: each file below it, by
/// relative path, in order).
fn fingerprint(req: &Request, source: &Path, inputs: &[PathBuf]) -> Result<Fingerprint> {
    let mut hashed = Vec::new();
    for input in inputs {
        for file in files_under(input)? {
            let hash = hash_file(&file)?;
            hashed.push((std::path::absolute(&file).unwrap_or(file), hash));
        }
    }
    Ok(Fingerprint {
        declarations: hex(XxHash64::oneshot(0, req.text.as_bytes())),
        source: std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf()),
        inputs: hashed,
    })
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

/// A file, or every file under a directory, sorted.
fn files_under(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    entries.sort();
    for e in entries {
        out.extend(files_under(&e)?);
    }
    Ok(out)
}

fn hash_file(path: &Path) -> Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read '{}'", path.display()))?;
    let mut hasher = XxHash64::with_seed(0);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read '{}'", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.write(&buf[..n]);
    }
    Ok(hex(hasher.finish()))
}

/// Writes `built` to `path` (refusing an input, or an existing file without `overwrite` or
/// not a lattice relanon wrote), staged and committed whole.
pub fn write(built: &Built, path: &Path, req: &Request, overwrite: bool) -> Result<()> {
    let mut read = vec![Input {
        path: built.meta.fingerprint.source.clone(),
        what: "the source",
    }];
    if let Some(p) = &req.path {
        read.push(Input {
            path: p.clone(),
            what: "the declarations",
        });
    }
    outputs::check(
        &[Output {
            kind: Kind::Lattice,
            path: path.to_path_buf(),
            option: "--out",
        }],
        &read,
        overwrite,
    )?;
    let bytes = encode(built)?;
    let context = || {
        format!(
            "cannot write '{}'; check that its directory exists and is writable",
            path.display()
        )
    };
    let pending = staging::stage_file(path, &bytes, None).with_context(context)?;
    staging::commit_all(vec![pending], path, overwrite).with_context(context)?;
    Ok(())
}

/// The file: magic, version, header length, the JSON header, then the index (per measure
/// the class counts, the layout and a hash of each node's histogram; a partial lattice's
/// computed nodes) and the histograms (per measure, every node's measures, then its sums).
/// Every array is little-endian and preceded by its length.
fn encode(built: &Built) -> Result<Vec<u8>> {
    let a = &built.lattice;
    let measures: Vec<&Histograms> = std::iter::once(&a.size)
        .chain(a.distinct.as_ref())
        .collect();
    let mut index = Vec::new();
    let mut data = Vec::new();
    for hs in &measures {
        let hashes: Vec<u64> = (0..hs.len()).map(|i| node_hash(hs.get(i))).collect();
        put_u32s(&mut index, &hs.classes);
        put_u64s(&mut index, &hs.start);
        put_u64s(&mut index, &hashes);
        put_u32s(&mut data, &hs.stats);
        put_u64s(&mut data, &hs.cum);
    }
    if let Some(computed) = &a.computed {
        let nodes: Vec<u32> = (0..computed.len() as u32)
            .filter(|&i| computed[i as usize])
            .collect();
        put_u32s(&mut index, &nodes);
    }
    let mut meta = built.meta.clone();
    meta.index_hash = hex(XxHash64::oneshot(0, &index));
    meta.index_len = index.len() as u64;
    let header = serde_json::to_vec(&meta)?;
    let mut out = Vec::with_capacity(28 + header.len() + index.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&index);
    out.extend_from_slice(&data);
    Ok(out)
}

/// A node's histogram hashed as its bytes are laid out in the file.
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

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_u64s(out: &mut Vec<u8>, v: &[u64]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Reads a lattice `relanon lattice` wrote: its header and index now, each node's histogram
/// when a search first asks for it (an answer reads a few hundred nodes, so a request over a
/// large lattice stays fast).
pub fn read(path: &Path) -> Result<Built> {
    let corrupt = |what: &str| {
        anyhow!(
            "'{}' is not a lattice relanon can read ({what}); rebuild it with `relanon lattice <declarations> --out {}`",
            path.display(),
            path.display()
        )
    };
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the lattice '{}'", path.display()))?;
    let total = file
        .metadata()
        .with_context(|| format!("cannot read the lattice '{}'", path.display()))?
        .len();
    let mut head = [0u8; 28];
    if total < 28 || file.read_exact(&mut head).is_err() || &head[..16] != MAGIC {
        return Err(corrupt("it does not start as one"));
    }
    let version = u32::from_le_bytes(head[16..20].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(corrupt(&format!(
            "format version {version}, this relanon reads {VERSION}"
        )));
    }
    let len = u64::from_le_bytes(head[20..28].try_into().expect("8 bytes"));
    if len > total - 28 {
        return Err(corrupt("its header is cut short"));
    }
    let mut header = vec![0u8; len as usize];
    file.read_exact(&mut header)
        .map_err(|_| corrupt("its header is cut short"))?;
    let meta: Meta =
        serde_json::from_slice(&header).map_err(|_| corrupt("its header is damaged"))?;
    if meta.index_len > total - 28 - len {
        return Err(corrupt("its index is cut short"));
    }
    let mut index = vec![0u8; meta.index_len as usize];
    file.read_exact(&mut index)
        .map_err(|_| corrupt("its index is cut short"))?;
    if hex(XxHash64::oneshot(0, &index)) != meta.index_hash {
        return Err(corrupt("its index is damaged"));
    }
    let heights: Vec<u16> = meta.columns.iter().map(|c| c.height).collect();
    let nodes: usize = heights.iter().map(|&h| h as usize + 1).product();
    let tables = meta.tables.len();
    let cut = || corrupt("its histograms are cut short or malformed");
    let mut reader = Reader {
        body: &index,
        at: 0,
    };
    let count = 1 + usize::from(meta.no_distinct.is_none());
    let mut layouts = Vec::new();
    for _ in 0..count {
        let classes = reader.u32s().ok_or_else(cut)?;
        let start = reader.u64s().ok_or_else(cut)?;
        let hashes = reader.u64s().ok_or_else(cut)?;
        let ok = classes.len() == nodes
            && start.len() == nodes + 1
            && hashes.len() == nodes
            && start.first() == Some(&0)
            && start.windows(2).all(|w| w[0] <= w[1]);
        if !ok {
            return Err(cut());
        }
        layouts.push((classes, start, hashes));
    }
    let computed = match meta.partial {
        None => None,
        Some(_) => {
            let mut flags = vec![false; nodes];
            for i in reader.u32s().ok_or_else(cut)? {
                *flags.get_mut(i as usize).ok_or_else(cut)? = true;
            }
            Some(flags)
        }
    };
    // Where each measure's arrays lie, checked against their length prefixes and the file's
    // length.
    let mut at = 28 + len + meta.index_len;
    let prefix = |file: &mut std::fs::File, at: u64| -> Result<u64> {
        let mut b = [0u8; 8];
        file.seek(SeekFrom::Start(at)).map_err(|_| cut())?;
        file.read_exact(&mut b).map_err(|_| cut())?;
        Ok(u64::from_le_bytes(b))
    };
    let mut measures = Vec::new();
    let mut size = None;
    let mut distinct = None;
    for (m, (classes, start, hashes)) in layouts.into_iter().enumerate() {
        let entries = *start.last().expect("nodes + 1 offsets");
        if prefix(&mut file, at)? != entries {
            return Err(cut());
        }
        let stats_at = at + 8;
        let cum_len = (entries + nodes as u64) * tables as u64;
        let cum_prefix_at = stats_at + 4 * entries;
        if prefix(&mut file, cum_prefix_at)? != cum_len {
            return Err(cut());
        }
        let cum_at = cum_prefix_at + 8;
        at = cum_at + 8 * cum_len;
        // Only the class counts stay here (they give the node count); the layout and the
        // histograms are the source's.
        let layout = Histograms {
            tables,
            classes,
            ..Histograms::default()
        };
        if m == 0 {
            size = Some(layout);
        } else {
            distinct = Some(layout);
        }
        measures.push(LazyMeasure {
            start,
            hashes,
            stats_at,
            cum_at,
            cache: (0..nodes).map(|_| OnceLock::new()).collect(),
        });
    }
    if at != total {
        return Err(cut());
    }
    let rows = meta.rows.clone();
    let source = LazyFile {
        file: Mutex::new(file),
        tables,
        measures,
        suppress_all: Histogram {
            classes: 0,
            stats: Vec::new(),
            cum: rows.clone(),
        },
        damaged: Mutex::new(None),
        path: path.to_path_buf(),
        blocks: Blocks::new(total),
    };
    Ok(Built {
        lattice: Annotated {
            heights,
            tables,
            entities: rows.first().copied().unwrap_or(0),
            rows,
            size: size.expect("the size measure is always written"),
            distinct,
            computed,
            extra: Vec::new(),
            source: Some(Source(Arc::new(source))),
        },
        meta,
    })
}

/// A persisted lattice's histograms, read node by node.
#[derive(Debug)]
struct LazyFile {
    file: Mutex<std::fs::File>,
    tables: usize,
    /// By size, then (if annotated) by distinct values.
    measures: Vec<LazyMeasure>,
    /// Handed out for a node that cannot be read: it suppresses every entity.
    suppress_all: Histogram,
    damaged: Mutex<Option<String>>,
    path: PathBuf,
    blocks: Blocks,
}

#[derive(Debug)]
struct LazyMeasure {
    start: Vec<u64>,
    hashes: Vec<u64>,
    stats_at: u64,
    cum_at: u64,
    cache: Vec<OnceLock<Histogram>>,
}

/// The file read in blocks, each once: a search reads nodes all over the lattice, and one
/// read per node would cost more than the nodes.
#[derive(Debug)]
struct Blocks {
    blocks: Vec<OnceLock<Option<Vec<u8>>>>,
    total: u64,
}

/// Bytes per block.
const BLOCK: u64 = 1 << 12;

impl Blocks {
    fn new(total: u64) -> Blocks {
        Blocks {
            blocks: (0..total.div_ceil(BLOCK))
                .map(|_| OnceLock::new())
                .collect(),
            total,
        }
    }

    /// `n` bytes of `file` from `at`, or `None` if they cannot be read.
    fn read(&self, file: &Mutex<std::fs::File>, at: u64, n: u64) -> Option<Vec<u8>> {
        if at.checked_add(n)? > self.total {
            return None;
        }
        let mut out = Vec::with_capacity(n as usize);
        let mut pos = at;
        while pos < at + n {
            let b = (pos / BLOCK) as usize;
            let block = self.blocks.get(b)?.get_or_init(|| {
                let from = b as u64 * BLOCK;
                let mut buf = vec![0u8; BLOCK.min(self.total - from) as usize];
                let mut f = file.lock().ok()?;
                f.seek(SeekFrom::Start(from)).ok()?;
                f.read_exact(&mut buf).ok()?;
                Some(buf)
            });
            let block = block.as_ref()?;
            let offset = (pos - b as u64 * BLOCK) as usize;
            let take = ((at + n - pos) as usize).min(block.len() - offset);
            out.extend_from_slice(&block[offset..offset + take]);
            pos += take as u64;
        }
        Some(out)
    }
}

impl LazyFile {
    /// Node `i` of measure `m`, if its bytes read back and match its hash.
    fn load(&self, m: &LazyMeasure, i: usize) -> Option<Histogram> {
        let (a, b) = (m.start[i], m.start[i + 1]);
        let t = self.tables as u64;
        let stats = self
            .blocks
            .read(&self.file, m.stats_at + 4 * a, 4 * (b - a))?;
        let cum = self.blocks.read(
            &self.file,
            m.cum_at + 8 * (a + i as u64) * t,
            8 * (b - a + 1) * t,
        )?;
        let h = Histogram {
            classes: 0,
            stats: stats
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("chunks of 4 bytes")))
                .collect(),
            cum: cum
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")))
                .collect(),
        };
        (node_hash(h.view()) == m.hashes[i]).then_some(h)
    }
}

impl HistogramSource for LazyFile {
    fn get(&self, measure: Measure, index: usize) -> Option<HistogramRef<'_>> {
        let m = self.measures.get(match measure {
            Measure::Size => 0,
            Measure::Distinct => 1,
        })?;
        let h = m.cache.get(index)?.get_or_init(|| {
            self.load(m, index).unwrap_or_else(|| {
                if let Ok(mut d) = self.damaged.lock() {
                    d.get_or_insert_with(|| {
                        format!(
                            "'{}' is not a lattice relanon can read (the histogram of node {index} is damaged); rebuild it with `relanon lattice <declarations> --out {}`",
                            self.path.display(),
                            self.path.display()
                        )
                    });
                }
                self.suppress_all.clone()
            })
        });
        Some(h.view())
    }

    fn damaged(&self) -> Option<String> {
        self.damaged.lock().ok().and_then(|d| d.clone())
    }
}

/// Reads histograms back as [`encode`] laid them out.
struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.body.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn len(&mut self) -> Option<usize> {
        usize::try_from(u64::from_le_bytes(self.take(8)?.try_into().ok()?)).ok()
    }

    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.len()?;
        let bytes = self.take(n.checked_mul(4)?)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("chunks of 4 bytes")))
                .collect(),
        )
    }

    fn u64s(&mut self) -> Option<Vec<u64>> {
        let n = self.len()?;
        let bytes = self.take(n.checked_mul(8)?)?;
        Some(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")))
                .collect(),
        )
    }
}

/// Refuses a persisted lattice built from other declarations, data or hierarchy files.
pub fn check_fresh(built: &Built, req: &Request, path: &Path) -> Result<()> {
    let f = &built.meta.fingerprint;
    let rebuild = format!(
        "rebuild it with `relanon lattice {} --out {} --overwrite`",
        req.origin,
        path.display()
    );
    if hex(XxHash64::oneshot(0, req.text.as_bytes())) != f.declarations {
        bail!(
            "the lattice '{}' was built from other declarations than {}; {rebuild}",
            path.display(),
            req.origin
        );
    }
    let policy = crate::decl::parse(&req.text).map_err(|e| anyhow!("{}:{e}", req.origin))?;
    let source = source_of(req, &policy)?;
    let source = std::path::absolute(&source).unwrap_or(source);
    if source != f.source {
        bail!(
            "the lattice '{}' was built from the source '{}', not '{}'; {rebuild}",
            path.display(),
            f.source.display(),
            source.display()
        );
    }
    let mut now = Vec::new();
    let mut roots = vec![f.source.clone()];
    roots.extend(
        f.inputs
            .iter()
            .map(|(p, _)| p.clone())
            .filter(|p| !p.starts_with(&f.source)),
    );
    for root in &roots {
        for file in files_under(root).unwrap_or_default() {
            let hash = hash_file(&file).unwrap_or_default();
            now.push((std::path::absolute(&file).unwrap_or(file), hash));
        }
    }
    now.sort();
    let mut then = f.inputs.clone();
    then.sort();
    if now != then {
        let changed = then
            .iter()
            .find(|x| !now.contains(x))
            .or_else(|| now.iter().find(|x| !then.contains(x)))
            .map(|(p, _)| p.display().to_string())
            .unwrap_or_default();
        bail!(
            "the lattice '{}' is stale: '{changed}' changed since it was built; {rebuild}",
            path.display()
        );
    }
    Ok(())
}

/// Computes, from the data, the histograms of a partial lattice's nodes at `levels` that it
/// lacks (the thesis's third variant, Fig. 5.23: the top acceptable node at query time, so
/// relaxing the suppression and k are answered as over the full lattice).
pub async fn compute_nodes(
    built: &mut Built,
    req: &Request,
    nodes: &[Vec<u16>],
    progress: &Progress,
) -> Result<()> {
    let missing: Vec<&Vec<u16>> = nodes
        .iter()
        .filter(|l| !built.lattice.is_computed(built.lattice.index(l)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let (plan, _, wh) = prepare(req, progress).await?;
    let forest = load(&plan, &wh, progress).await?;
    let lattice = Lattice::new(&forest);
    let rows = tree_rows(&forest);
    let distinct = built.meta.no_distinct.is_none();
    for levels in missing {
        let (size, by_distinct) = node_histograms(&lattice, levels, distinct, &rows);
        let index = built.lattice.index(levels);
        built.lattice.extra.push((index, size, by_distinct));
    }
    Ok(())
}

/// The top acceptable node `ask` names, if it is valid (errors are `answer`'s to report).
pub fn top_acceptable(built: &Built, ask: &Ask) -> Option<Vec<u16>> {
    max_levels(built, ask).ok()
}

/// A request as the command line gives it.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    pub k: Option<u32>,
    pub l: Option<u32>,
    /// `321` (entities) or `1%` (of the entities).
    pub max_suppression: Option<String>,
    /// `table.column=level` or `column=level`.
    pub max_levels: Vec<String>,
}

/// A request's answers, as `negotiate` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Answered {
    pub request: AskedJson,
    pub lattice: LatticeJson,
    pub v_max: AnswerJson,
    pub exact: Option<AnswerJson>,
    pub relaxations: Vec<RelaxationJson>,
    pub stats: StatsJson,
}

#[derive(Debug, Clone, Serialize)]
pub struct AskedJson {
    /// `k` or `l`.
    pub measure: String,
    pub value: u32,
    pub max_suppression: u64,
    pub entities: u64,
    pub max_levels: BTreeMap<String, u16>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatticeJson {
    pub nodes: usize,
    /// Nodes with histograms (all of them but for a partial lattice).
    pub computed: usize,
    /// A partial lattice's share of each height's nodes: its answers are the best among
    /// the computed nodes, not proven optimal.
    pub partial: Option<f64>,
    /// Whether the top acceptable node has its histogram (if not, `v_max`'s suppression is a
    /// lower bound).
    pub v_max_computed: bool,
    pub columns: Vec<String>,
    pub heights: Vec<u16>,
    pub build_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AnswerJson {
    /// Levels in column order (also keyed by column in `by_column`).
    pub levels: Vec<u16>,
    pub by_column: BTreeMap<String, u16>,
    pub measure: String,
    pub value: u32,
    pub height: u32,
    /// LM of the node's generalization over every QI cell of the family (001 Def. 8),
    /// before suppression: a suppressed cell would count 1 instead.
    pub lm: f64,
    pub suppressed: SuppressedJson,
    /// How the answer departs from the request (empty for an exact answer).
    pub deviation: String,
    /// The `--with` options that release it with `anonymize`.
    pub with: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuppressedJson {
    pub entities: u64,
    pub rows: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RelaxationJson {
    pub relaxes: String,
    pub answer: Option<AnswerJson>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatsJson {
    pub visited: usize,
    pub microseconds: u64,
}

/// Checks `ask` against the lattice and answers it.
pub fn answer(built: &Built, ask: &Ask) -> Result<Answered> {
    let meta = &built.meta;
    let a = &built.lattice;
    let n = a.entities;
    let (measure, value) = match (ask.k, ask.l) {
        (Some(_), Some(_)) => bail!("give --k or --l, not both"),
        (Some(k), None) => (Measure::Size, k),
        (None, Some(l)) => (Measure::Distinct, l),
        (None, None) => match (meta.declared.measure.as_str(), meta.declared.diversity.as_deref()) {
            ("l", Some("probabilistic")) => bail!(
                "the declarations ask for l-diversity in its frequency form, which negotiation cannot answer: it is not monotone over the lattice (generalizing can make a class fail, so no node's suppression bounds its parents'); pass --l L for distinct l-diversity or --k K"
            ),
            ("l", _) => (Measure::Distinct, meta.declared.value),
            _ => (Measure::Size, meta.declared.value),
        },
    };
    let name = if measure == Measure::Size { "k" } else { "l" };
    if measure == Measure::Distinct {
        if let Some(why) = &meta.no_distinct {
            bail!("--l needs distinct sensitive values per class, which this lattice does not count: {why}; negotiate --k instead");
        }
    }
    if value < 2 {
        bail!("{name} = {value} protects nobody: {name} must be at least 2");
    }
    if value as u64 > n {
        bail!("{name} = {value} is above the {n} entities: no class can be that large; ask for {name} <= {n}");
    }
    let budget = parse_budget(ask.max_suppression.as_deref().unwrap_or("0"), n)?;
    let max_levels = max_levels(built, ask)?;
    let query = Query {
        measure,
        value,
        budget,
        max_levels: max_levels.clone(),
    };
    let started = Instant::now();
    let got = if a.computed.is_some() {
        negotiate_partial(a, &query)
    } else {
        negotiate(a, &query)
    };
    let micros = started.elapsed().as_micros() as u64;
    if let Some(why) = a.source.as_ref().and_then(|s| s.0.damaged()) {
        bail!("{why}");
    }
    let render = |answer: &Answer, deviation: String| -> AnswerJson {
        let by_column = meta
            .columns
            .iter()
            .zip(&answer.levels)
            .map(|(c, &l)| (c.name.clone(), l))
            .collect();
        let share = answer.suppressed[0] as f64 / n.max(1) as f64;
        let model = match measure {
            Measure::Size => format!("model = 'k-anonymity', k = {}", answer.value),
            Measure::Distinct => format!(
                "model = 'l-diversity', diversity = 'distinct', l = {}",
                answer.value
            ),
        };
        let cells: f64 = meta.columns.iter().map(|c| c.cells as f64).sum();
        let lm = meta
            .columns
            .iter()
            .zip(&answer.levels)
            .map(|(c, &l)| c.levels.get(l as usize).map_or(0.0, |m| m.loss))
            .sum::<f64>()
            / cells.max(1.0);
        AnswerJson {
            levels: answer.levels.clone(),
            by_column,
            lm,
            measure: name.to_string(),
            value: answer.value,
            height: answer.height,
            suppressed: SuppressedJson {
                entities: answer.suppressed[0],
                rows: meta
                    .tables
                    .iter()
                    .zip(&answer.suppressed)
                    .skip(1)
                    .map(|(t, &r)| (t.clone(), r))
                    .collect(),
            },
            deviation,
            with: format!(
                "algorithm = 'lattice', {model}, max_suppression = {share}, levels = '{}'",
                answer
                    .levels
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    };
    let deviation = |relaxes: Relaxed, answer: &Answer| -> String {
        match relaxes {
            Relaxed::Suppression => format!(
                "+{} entities over {budget}",
                answer.suppressed[0].saturating_sub(budget)
            ),
            Relaxed::Value => format!("{name} {value} -> {}", answer.value),
            Relaxed::Levels => {
                let above: Vec<String> = meta
                    .columns
                    .iter()
                    .zip(answer.levels.iter().zip(&max_levels))
                    .filter(|(_, (l, m))| l > m)
                    .map(|(c, (l, m))| format!("{} {m} -> {l}", c.name))
                    .collect();
                format!("above the max: {}", above.join(", "))
            }
        }
    };
    Ok(Answered {
        request: AskedJson {
            measure: name.to_string(),
            value,
            max_suppression: budget,
            entities: n,
            max_levels: meta
                .columns
                .iter()
                .zip(&max_levels)
                .map(|(c, &l)| (c.name.clone(), l))
                .collect(),
        },
        lattice: LatticeJson {
            nodes: a.nodes(),
            computed: a
                .computed
                .as_ref()
                .map_or(a.nodes(), |c| c.iter().filter(|&&x| x).count()),
            partial: meta.partial,
            v_max_computed: got.v_max_computed,
            columns: meta.columns.iter().map(|c| c.name.clone()).collect(),
            heights: a.heights.clone(),
            build_seconds: meta.build_seconds,
        },
        v_max: render(&got.v_max, String::new()),
        exact: got.exact.as_ref().map(|e| render(e, String::new())),
        relaxations: got
            .relaxations
            .iter()
            .map(|r| RelaxationJson {
                relaxes: r.relaxes.name(measure).to_string(),
                answer: r
                    .answer
                    .as_ref()
                    .ok()
                    .map(|x| render(x, deviation(r.relaxes, x))),
                reason: r.answer.as_ref().err().cloned(),
            })
            .collect(),
        stats: StatsJson {
            visited: got.visited,
            microseconds: micros,
        },
    })
}

/// The request's top acceptable node: every column at its top unless `--max-level` says.
fn max_levels(built: &Built, ask: &Ask) -> Result<Vec<u16>> {
    let meta = &built.meta;
    let a = &built.lattice;
    let mut max_levels = a.heights.clone();
    let mut given: Vec<usize> = Vec::new();
    for spec in &ask.max_levels {
        let (col, level) = spec.split_once('=').ok_or_else(|| {
            anyhow!(
                "--max-level '{spec}': write COLUMN=LEVEL, e.g. --max-level {}=1",
                meta.columns
                    .first()
                    .map_or("table.column", |c| c.name.as_str())
            )
        })?;
        let (col, level) = (col.trim(), level.trim());
        let matches: Vec<usize> = meta
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.name.eq_ignore_ascii_case(col)
                    || c.name
                        .split_once('.')
                        .is_some_and(|(_, short)| short.eq_ignore_ascii_case(col))
            })
            .map(|(i, _)| i)
            .collect();
        if matches.is_empty() {
            bail!(
                "--max-level '{spec}': {col} is not a QI column of the lattice; the QI columns are {}",
                meta.columns.iter().map(|c| format!("{} (levels 0-{})", c.name, c.height)).collect::<Vec<_>>().join(", ")
            );
        }
        let names: std::collections::BTreeSet<&str> = matches
            .iter()
            .map(|&i| meta.columns[i].name.as_str())
            .collect();
        if names.len() > 1 {
            bail!(
                "--max-level '{spec}': {col} names {}; write the table too",
                names.into_iter().collect::<Vec<_>>().join(" and ")
            );
        }
        let level: u16 = level.parse().map_err(|_| {
            anyhow!(
                "--max-level '{spec}': the level must be a whole number from 0 to {}",
                meta.columns[matches[0]].height
            )
        })?;
        for &i in &matches {
            if given.contains(&i) {
                bail!(
                    "--max-level names {} twice; give each column once",
                    meta.columns[i].name
                );
            }
            let c = &meta.columns[i];
            if level > c.height {
                bail!(
                    "--max-level '{spec}': {} has levels 0 to {} (hierarchy {}), not {level}",
                    c.name,
                    c.height,
                    c.hierarchy
                );
            }
            max_levels[i] = level;
            given.push(i);
        }
    }
    Ok(max_levels)
}

/// `321` entities or `1.5%` of `n`, within [0, n].
fn parse_budget(text: &str, n: u64) -> Result<u64> {
    let t = text.trim();
    let bad = || {
        anyhow!("--max-suppression '{text}': write a number of entities (0 to {n}) or a share such as 1% (0% to 100%)")
    };
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(0.0..=100.0).contains(&p) {
            bail!("--max-suppression {t} is outside 0% to 100%");
        }
        // 1% of 30,162 is 301 entities (floored: the budget is a most).
        return Ok((p / 100.0 * n as f64 + 1e-9).floor() as u64);
    }
    let v: f64 = t.parse().map_err(|_| bad())?;
    if v < 0.0 || v.fract() != 0.0 {
        return Err(bad());
    }
    if v > n as f64 {
        bail!("--max-suppression {t} is above the {n} entities; give at most {n} (or a share such as 5%)");
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_entities_or_shares() {
        assert_eq!(parse_budget("321", 30162).expect("ok"), 321);
        assert_eq!(parse_budget("1%", 30162).expect("ok"), 301);
        assert_eq!(parse_budget("100%", 10).expect("ok"), 10);
        assert_eq!(parse_budget("0", 10).expect("ok"), 0);
        for bad in ["-1", "101%", "-0.5%", "x", "1.5", "11"] {
            assert!(parse_budget(bad, 10).is_err(), "{bad}");
        }
    }
}
