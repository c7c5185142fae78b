//! Reads a lattice back: the footer, the metadata and the class counts when the file is
//! opened, each row group's histograms when a search first asks for one of its nodes (an
//! answer reads a few hundred nodes, so a request over a large lattice stays fast), each
//! node checked against its hash.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use super::{columns, node_hash, write, Built, LatticeFileError, Meta, META_KEY, VERSION};
use crate::algo::kernel::annotate::{
    Annotated, Histogram, HistogramRef, HistogramSource, Histograms, Measure, Source,
};
use crate::outputs::{LATTICE_BINARY_MAGIC, LATTICE_KEY, PARQUET_MAGIC};

fn unreadable(path: &Path, what: impl Into<String>) -> LatticeFileError {
    LatticeFileError::Unreadable {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// The message of histograms that do not add up to the lattice the metadata describes.
const MALFORMED: &str = "its histograms are cut short or malformed";

/// Reads a lattice `relanon lattice` wrote: its metadata and class counts now, the
/// histograms on demand.
pub fn read(path: &Path) -> Result<Built, LatticeFileError> {
    let file = open(path)?;
    let footer = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| {
        unreadable(
            path,
            format!("its Parquet footer is damaged or cut short: {e}"),
        )
    })?;
    let meta = meta_of(path, &footer)?;
    let heights: Vec<u16> = meta.columns.iter().map(|c| c.height).collect();
    let starts = group_starts(path, &footer, &meta, &heights)?;
    let nodes = starts.last().copied().unwrap_or(0);
    let distinct = meta.no_distinct.is_none();
    let index =
        read_index(&file, &footer, distinct, nodes).ok_or_else(|| unreadable(path, MALFORMED))?;
    let tables = meta.tables.len();
    let layout = |classes| Histograms {
        tables,
        classes,
        ..Histograms::default()
    };
    let mut classes = index.classes.into_iter();
    let size = layout(classes.next().unwrap_or_default());
    let by_distinct = classes.next().map(layout);
    let rows = meta.rows.clone();
    let source = LazyFile::new(path, file, footer, starts, &meta);
    Ok(Built {
        lattice: Annotated {
            heights,
            tables,
            entities: rows.first().copied().unwrap_or(0),
            rows,
            size,
            distinct: by_distinct,
            computed: meta.partial.map(|_| index.computed),
            extra: Vec::new(),
            source: Some(Source(Arc::new(source))),
        },
        meta,
    })
}

/// Opens the file and refuses what does not start and end as Parquet, naming a lattice of
/// relanon's earlier binary layout.
fn open(path: &Path) -> Result<File, LatticeFileError> {
    let cannot = |source| LatticeFileError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(cannot)?;
    let total = file.metadata().map_err(cannot)?.len();
    let mut head = Vec::with_capacity(20);
    (&mut file)
        .take(20)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    if head.len() == 20 && head[..16] == LATTICE_BINARY_MAGIC[..] {
        let version = u32::from_le_bytes([head[16], head[17], head[18], head[19]]);
        return Err(unreadable(
            path,
            format!("format version {version}, this relanon reads {VERSION}"),
        ));
    }
    if head.len() < 4 || head[..4] != PARQUET_MAGIC[..] {
        return Err(unreadable(path, "it is not a Parquet file"));
    }
    let mut tail = [0u8; 4];
    let ends = total >= 12
        && file.seek(SeekFrom::End(-4)).is_ok()
        && file.read_exact(&mut tail).is_ok()
        && tail == *PARQUET_MAGIC;
    if !ends {
        return Err(unreadable(
            path,
            "it is cut short: its Parquet footer is missing",
        ));
    }
    Ok(file)
}

/// The lattice's [`Meta`], once the file is known to be a lattice of this format version.
fn meta_of(path: &Path, footer: &ArrowReaderMetadata) -> Result<Meta, LatticeFileError> {
    let kv = footer
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default();
    let value = |key: &str| {
        kv.iter()
            .find(|e| e.key == key)
            .map(|e| e.value.clone().unwrap_or_default())
    };
    let Some(version) = value(LATTICE_KEY) else {
        return Err(unreadable(
            path,
            format!(
                "it is a Parquet file without the '{LATTICE_KEY}' key relanon writes in a lattice"
            ),
        ));
    };
    if version.trim() != VERSION.to_string() {
        return Err(unreadable(
            path,
            format!("format version {version}, this relanon reads {VERSION}"),
        ));
    }
    value(META_KEY)
        .and_then(|json| serde_json::from_str(&json).ok())
        .ok_or_else(|| unreadable(path, "its metadata is damaged"))
}

/// The first node of each row group (and the node count last), checked against the columns
/// this version writes and the nodes the metadata's columns make.
fn group_starts(
    path: &Path,
    footer: &ArrowReaderMetadata,
    meta: &Meta,
    heights: &[u16],
) -> Result<Vec<usize>, LatticeFileError> {
    let expected = write::schema(meta.no_distinct.is_none());
    if footer.schema().fields() != expected.fields() {
        return Err(unreadable(
            path,
            "its columns are not the ones this relanon writes",
        ));
    }
    let nodes = heights
        .iter()
        .try_fold(1usize, |n, &h| n.checked_mul(h as usize + 1));
    let mut starts = vec![0usize];
    for g in footer.metadata().row_groups() {
        let last = starts.last().copied().unwrap_or(0);
        let rows = usize::try_from(g.num_rows()).unwrap_or(usize::MAX);
        starts.push(last.saturating_add(rows));
    }
    let tables_ok = !meta.tables.is_empty() && meta.rows.len() == meta.tables.len();
    let groups_ok = starts.windows(2).all(|w| w[0] < w[1]);
    if nodes != starts.last().copied() || !tables_ok || !groups_ok {
        return Err(unreadable(path, MALFORMED));
    }
    Ok(starts)
}

/// What is read when the file is opened: per measure, each node's class count; which nodes
/// are computed.
struct Index {
    classes: Vec<Vec<u32>>,
    computed: Vec<bool>,
}

/// The class counts and computed flags of every node (`None`: they do not read back).
fn read_index(
    file: &File,
    footer: &ArrowReaderMetadata,
    distinct: bool,
    nodes: usize,
) -> Option<Index> {
    let schema = footer.schema();
    let mut wanted = vec![columns::COMPUTED.to_string()];
    let count = if distinct { 2 } else { 1 };
    for m in &columns::MEASURES[..count] {
        wanted.push(columns::of(m, columns::CLASSES));
    }
    let roots: Vec<usize> = wanted
        .iter()
        .map(|w| schema.index_of(w).ok())
        .collect::<Option<_>>()?;
    let reader =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file.try_clone().ok()?, footer.clone())
            .with_projection(ProjectionMask::roots(footer.parquet_schema(), roots))
            .with_batch_size(1 << 16)
            .build()
            .ok()?;
    let mut index = Index {
        classes: vec![Vec::with_capacity(nodes); count],
        computed: Vec::with_capacity(nodes),
    };
    for batch in reader {
        let batch = batch.ok()?;
        let computed = batch.column_by_name(columns::COMPUTED)?.as_boolean_opt()?;
        index
            .computed
            .extend(computed.iter().map(|c| c == Some(true)));
        for (m, out) in columns::MEASURES.iter().zip(&mut index.classes) {
            let col = batch.column_by_name(&columns::of(m, columns::CLASSES))?;
            let col = col.as_primitive_opt::<UInt32Type>()?;
            out.extend(col.iter().map(|c| c.unwrap_or(0)));
        }
    }
    (index.computed.len() == nodes).then_some(index)
}

/// A persisted lattice's histograms, read a row group at a time.
#[derive(Debug)]
struct LazyFile {
    /// Held while a row group is decoded: the readers share the file's offset.
    file: Mutex<File>,
    footer: ArrowReaderMetadata,
    tables: usize,
    /// The first node of each row group, and the node count last.
    starts: Vec<usize>,
    /// By size, then (if annotated) by distinct values.
    measures: Vec<LazyMeasure>,
    /// Handed out for a node that cannot be read: it suppresses every entity.
    suppress_all: Histogram,
    damaged: Mutex<Option<String>>,
    path: PathBuf,
}

#[derive(Debug)]
struct LazyMeasure {
    /// The measure's column prefix.
    name: &'static str,
    /// Its columns' indices.
    roots: Vec<usize>,
    groups: Vec<OnceLock<Group>>,
}

/// One row group's histograms by one measure.
#[derive(Debug)]
struct Group {
    histograms: Histograms,
    /// Whether each node read back whole and matched its hash.
    ok: Vec<bool>,
}

impl LazyFile {
    fn new(
        path: &Path,
        file: File,
        footer: ArrowReaderMetadata,
        starts: Vec<usize>,
        meta: &Meta,
    ) -> LazyFile {
        let count = if meta.no_distinct.is_none() { 2 } else { 1 };
        let groups = starts.len() - 1;
        let schema = footer.schema().clone();
        let measures = columns::MEASURES[..count]
            .iter()
            .map(|&name| LazyMeasure {
                name,
                roots: [
                    columns::CLASSES,
                    columns::STATS,
                    columns::CUM,
                    columns::HASH,
                ]
                .iter()
                .filter_map(|w| schema.index_of(&columns::of(name, w)).ok())
                .collect(),
                groups: (0..groups).map(|_| OnceLock::new()).collect(),
            })
            .collect();
        LazyFile {
            file: Mutex::new(file),
            footer,
            tables: meta.tables.len(),
            starts,
            measures,
            suppress_all: Histogram {
                classes: 0,
                stats: Vec::new(),
                cum: meta.rows.clone(),
            },
            damaged: Mutex::new(None),
            path: path.to_path_buf(),
        }
    }

    /// Row group `g`'s columns of measure `m`, or `None` if they do not decode.
    fn decode(&self, m: &LazyMeasure, g: usize) -> Option<RecordBatch> {
        let file = self.file.lock().ok()?;
        let rows = self.starts[g + 1] - self.starts[g];
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
            file.try_clone().ok()?,
            self.footer.clone(),
        )
        .with_row_groups(vec![g])
        .with_projection(ProjectionMask::roots(
            self.footer.parquet_schema(),
            m.roots.iter().copied(),
        ))
        .with_batch_size(rows.max(1))
        .build()
        .ok()?;
        let batches = reader.collect::<Result<Vec<_>, _>>().ok()?;
        let schema = batches.first()?.schema();
        arrow::compute::concat_batches(&schema, &batches).ok()
    }

    /// Row group `g`'s histograms by measure `m`, every node checked.
    fn load(&self, m: &LazyMeasure, g: usize) -> Group {
        let rows = self.starts[g + 1] - self.starts[g];
        let mut group = Group {
            histograms: Histograms {
                tables: self.tables,
                start: vec![0],
                ..Histograms::default()
            },
            ok: Vec::with_capacity(rows),
        };
        let batch = self.decode(m, g).filter(|b| b.num_rows() == rows);
        for j in 0..rows {
            let node = batch.as_ref().map_or(Node::Damaged, |b| self.node(b, m, j));
            let h = match &node {
                Node::Read(h) => h.view(),
                Node::Skipped | Node::Damaged => self.suppress_all.view(),
            };
            let hs = &mut group.histograms;
            hs.classes.push(h.classes);
            hs.stats.extend_from_slice(h.stats);
            hs.cum.extend_from_slice(h.cum);
            hs.start.push(hs.stats.len() as u64);
            group.ok.push(!matches!(node, Node::Damaged));
        }
        group
    }

    /// Row `j` of a decoded row group.
    fn node(&self, batch: &RecordBatch, m: &LazyMeasure, j: usize) -> Node {
        let column = |what: &str| batch.column_by_name(&columns::of(m.name, what));
        let read = || -> Option<Node> {
            let stats = column(columns::STATS)?.as_list_opt::<i32>()?;
            if stats.is_null(j) {
                // A node a partial lattice skipped: never read (see `Annotated::histogram`).
                return Some(Node::Skipped);
            }
            let cum = column(columns::CUM)?.as_list_opt::<i32>()?;
            let classes = column(columns::CLASSES)?.as_primitive_opt::<UInt32Type>()?;
            let hash = column(columns::HASH)?.as_primitive_opt::<UInt64Type>()?;
            let s = stats.value(j);
            let c = cum.value(j);
            let (s, c) = (
                s.as_primitive_opt::<UInt32Type>()?,
                c.as_primitive_opt::<UInt64Type>()?,
            );
            let whole = s.null_count() == 0
                && c.null_count() == 0
                && !cum.is_null(j)
                && !hash.is_null(j)
                && c.len() == (s.len() + 1) * self.tables;
            if !whole {
                return None;
            }
            let h = HistogramRef {
                classes: classes.value(j),
                stats: s.values(),
                cum: c.values(),
            };
            (node_hash(h) == hash.value(j)).then(|| {
                Node::Read(Histogram {
                    classes: h.classes,
                    stats: h.stats.to_vec(),
                    cum: h.cum.to_vec(),
                })
            })
        };
        read().unwrap_or(Node::Damaged)
    }
}

/// A node as read from its row.
enum Node {
    Read(Histogram),
    /// Not computed (a partial lattice).
    Skipped,
    Damaged,
}

impl HistogramSource for LazyFile {
    fn get(&self, measure: Measure, index: usize) -> Option<HistogramRef<'_>> {
        let m = self.measures.get(match measure {
            Measure::Size => 0,
            Measure::Distinct => 1,
        })?;
        let g = self
            .starts
            .partition_point(|&s| s <= index)
            .checked_sub(1)?;
        let group = m.groups.get(g)?.get_or_init(|| self.load(m, g));
        let j = index - self.starts[g];
        if *group.ok.get(j)? {
            return Some(group.histograms.get(j));
        }
        if let Ok(mut d) = self.damaged.lock() {
            d.get_or_insert_with(|| {
                unreadable(
                    &self.path,
                    format!("the histogram of node {index} is damaged"),
                )
                .to_string()
            });
        }
        Some(self.suppress_all.view())
    }

    fn damaged(&self) -> Option<String> {
        self.damaged.lock().ok().and_then(|d| d.clone())
    }
}
