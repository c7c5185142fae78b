//! The wire forms of a shard's task and of its outcome, for a run whose shards are
//! anonymized on a cluster (`--cluster`): what an executor needs to run a shard exactly as
//! the client would (`sharded::Task`), and what it hands back (`sharded::Outcome`).
//!
//! A task travels as the request that prepared the run (declarations, `--with`, the source)
//! plus what the client computed over the whole family: the hierarchies and the drawn count
//! queries. The executor prepares the plan and the algorithm again from the request, so no
//! plan type needs a wire form, and refuses a task from another version of relanon. An
//! outcome travels as rows of one record batch: its statistics, key map and tallies (CBOR:
//! binary, so every loss and tally comes back bit for bit and both paths write the same
//! report), then each released table and the suppressed entities' keys as Arrow IPC.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use arrow::array::{Array, LargeBinaryArray, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::piece::Outcome;
pub(super) use super::shard_files::ShardFiles;
use super::Request;
use crate::algo::{OptionSpec, Options, Relocated, WireValue};
use crate::hierarchy::Hierarchy;
use crate::keymap::KeyMap;
use crate::release::{Materialized, TableStats};
use crate::utility::{Tally, TallyPiece};
use crate::warehouse::{ForeignKey, ReleaseTable};

/// The version a task and an outcome carry: a cluster runs one build of relanon.
pub(super) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What every shard's task shares.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Job {
    pub version: String,
    /// The declarations as the client read them, and where they were read.
    pub text: String,
    pub base: PathBuf,
    pub origin: String,
    pub source: PathBuf,
    pub with: Option<String>,
    /// The run's shard count (a shard's run reads it, `algo::shards::run_shard`).
    pub shards: usize,
    /// Per family table, per QI, built over the whole family.
    pub hierarchies: Vec<Vec<Hierarchy>>,
    /// The drawn count queries, no answers yet.
    pub tally: Tally,
    /// The tables a cluster wrote shard by shard; the others are read from the source.
    pub files: ShardFiles,
}

/// A [`Job`] as the client sends it, borrowing what it holds: the same fields in the same
/// order, so it reads back as a `Job`.
#[derive(Serialize)]
struct JobOut<'a> {
    version: &'a str,
    text: &'a str,
    base: PathBuf,
    origin: &'a str,
    source: PathBuf,
    with: Option<&'a str>,
    shards: usize,
    hierarchies: &'a [Vec<Hierarchy>],
    tally: &'a Tally,
    files: &'a ShardFiles,
}

impl Job {
    /// The encoded job of a run prepared from `req`, reading `source` (and the tables of
    /// `files` as a cluster wrote them), in `shards` shards. Paths travel absolute: an
    /// executor's working directory is its own.
    pub fn encode_for(
        req: &Request,
        source: &std::path::Path,
        shards: usize,
        hierarchies: &[Vec<Hierarchy>],
        tally: &Tally,
        files: &ShardFiles,
    ) -> Result<Vec<u8>> {
        cbor(&JobOut {
            version: VERSION,
            text: &req.text,
            base: absolute(&req.base)?,
            origin: &req.origin,
            source: absolute(source)?,
            with: req.with.as_deref(),
            shards,
            hierarchies,
            tally,
            files,
        })
    }

    /// The request an executor prepares the plan and the algorithm from.
    pub fn request(&self) -> Request {
        request(
            &self.text,
            &self.base,
            &self.origin,
            &self.source,
            &self.with,
        )
    }

    /// A job from `bytes`; one from another version of relanon is refused.
    pub fn decode(bytes: &[u8]) -> Result<Job> {
        decoded(bytes, "a shard's task", |job: &Job| &job.version)
    }
}

/// The request a task prepares its plan from: the declarations and where they were read,
/// the source, `--with`.
fn request(
    text: &str,
    base: &std::path::Path,
    origin: &str,
    source: &std::path::Path,
    with: &Option<String>,
) -> Request {
    Request {
        text: text.to_string(),
        base: base.to_path_buf(),
        origin: origin.to_string(),
        source: Some(source.to_path_buf()),
        with: with.clone(),
        ..Request::default()
    }
}

/// `p` as an executor is told it: absolute, since its working directory is its own (the
/// declarations in the working directory have an empty base).
fn absolute(p: &std::path::Path) -> Result<PathBuf> {
    let p = if p.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        p
    };
    std::path::absolute(p).with_context(|| format!("resolving '{}'", p.display()))
}

/// What every task verifying a staged release shares: the request the plan is prepared
/// from, and where the release, the key map and the partitions' assignment are on the
/// shared storage.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct VerifyJob {
    pub version: String,
    pub text: String,
    pub base: PathBuf,
    pub origin: String,
    pub source: PathBuf,
    pub with: Option<String>,
    pub release: PathBuf,
    pub key_map: PathBuf,
    pub assignment: PathBuf,
}

impl VerifyJob {
    /// The job of verifying the release staged at `release` of a run prepared from `req`,
    /// reading `source`; the key map and the assignment are at the paths given.
    pub fn encode_for(
        req: &Request,
        source: &std::path::Path,
        [release, key_map, assignment]: [&std::path::Path; 3],
    ) -> Result<Vec<u8>> {
        cbor(&VerifyJob {
            version: VERSION.to_string(),
            text: req.text.clone(),
            base: absolute(&req.base)?,
            origin: req.origin.clone(),
            source: absolute(source)?,
            with: req.with.clone(),
            release: absolute(release)?,
            key_map: absolute(key_map)?,
            assignment: absolute(assignment)?,
        })
    }

    /// The request an executor prepares the plan from.
    pub fn request(&self) -> Request {
        request(
            &self.text,
            &self.base,
            &self.origin,
            &self.source,
            &self.with,
        )
    }

    /// A job from `bytes`; one from another version of relanon is refused.
    pub fn decode(bytes: &[u8]) -> Result<VerifyJob> {
        decoded(bytes, "a verify task", |job: &VerifyJob| &job.version)
    }
}

/// `what` (a task's job) read from `bytes`, refused unless `version` says it is this build's.
fn decoded<T: for<'de> Deserialize<'de>>(
    bytes: &[u8],
    what: &str,
    version: impl Fn(&T) -> &str,
) -> Result<T> {
    let job: T = ciborium::from_reader(bytes).map_err(|e| {
        anyhow!("{what} could not be read ({e}): the client and this executor must be the same build of relanon {VERSION}")
    })?;
    let theirs = version(&job);
    if theirs != VERSION {
        bail!(
            "{what} comes from relanon {theirs} and this executor is relanon {VERSION}: run one version on the client, the scheduler and every executor"
        );
    }
    Ok(job)
}

/// A released table's shape, beside its rows.
#[derive(Debug, Serialize, Deserialize)]
struct TableHead {
    name: String,
    primary_key: Vec<String>,
    foreign_keys: Vec<ForeignKey>,
}

/// Everything of an outcome but its rows.
#[derive(Debug, Serialize, Deserialize)]
struct Head {
    version: String,
    tables: Vec<TableHead>,
    keys: KeyMap,
    stats: Vec<TableStats>,
    ec_sizes: Vec<usize>,
    suppressed_entities: usize,
    recoding: Vec<(String, u16, u16)>,
    relocation: Option<Relocated>,
    tally: TallyPiece,
    used: Option<Vec<(String, WireValue)>>,
    warnings: Vec<String>,
}

/// What a row of an encoded outcome holds.
const HEAD: &str = "head";
const TABLE: &str = "table";
const SUPPRESSED: &str = "suppressed";

/// The most bytes of an outcome's row, and so of a batch of one row: gRPC refuses a message
/// over 16 MiB unless both ends raise the limit (Ballista's client reads with tonic's
/// default), and one shard's table of TPC-H SF 1 in 8 shards is twice that.
const CHUNK: usize = 4 << 20;

/// The schema of an encoded outcome: the shard it is of, how many rows it has, what a row
/// holds, which part of the outcome and which chunk of that part it is, its bytes.
pub(super) fn outcome_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("shard", DataType::UInt32, false),
        Field::new("rows", DataType::UInt32, false),
        Field::new("part", DataType::Utf8, false),
        Field::new("seq", DataType::UInt32, false),
        Field::new("chunk", DataType::UInt32, false),
        Field::new("data", DataType::LargeBinary, false),
    ]))
}

/// Shard `shard`'s outcome as record batches of [`outcome_schema`], a row each, none over
/// [`CHUNK`] bytes of data.
pub(super) fn encode_outcome(shard: u32, outcome: Outcome) -> Result<Vec<RecordBatch>> {
    encode_outcome_in(shard, outcome, CHUNK)
}

fn encode_outcome_in(shard: u32, outcome: Outcome, chunk: usize) -> Result<Vec<RecordBatch>> {
    let Outcome {
        materialized: m,
        tally,
        suppressed,
        used,
        warnings,
    } = outcome;
    let head = Head {
        version: VERSION.to_string(),
        tables: m
            .tables
            .iter()
            .map(|t| TableHead {
                name: t.name.clone(),
                primary_key: t.primary_key.clone(),
                foreign_keys: t.foreign_keys.clone(),
            })
            .collect(),
        keys: m.keys,
        stats: m.stats,
        ec_sizes: m.ec_sizes,
        suppressed_entities: m.suppressed_entities,
        recoding: m.recoding,
        relocation: m.relocation,
        tally,
        used: used.map(|o| o.to_wire()),
        warnings,
    };
    let mut parts = vec![HEAD];
    let mut data = vec![cbor(&head)?];
    for t in &m.tables {
        parts.push(TABLE);
        data.push(ipc(&t.batch)?);
    }
    if let Some(s) = &suppressed {
        parts.push(SUPPRESSED);
        data.push(ipc(s)?);
    }
    let parts: Vec<(&str, &[u8])> = parts
        .into_iter()
        .zip(data.iter().map(Vec::as_slice))
        .collect();
    rows_of(shard, &parts, chunk)
}

/// `parts` (what each holds, its bytes) of task `shard`'s answer as record batches of
/// [`outcome_schema`], a row each, none over `chunk` bytes of data.
fn rows_of(shard: u32, parts: &[(&str, &[u8])], chunk: usize) -> Result<Vec<RecordBatch>> {
    // (part, its index, chunk index, bytes): an empty part is one empty chunk.
    let mut rows: Vec<(&str, u32, u32, &[u8])> = Vec::new();
    for (seq, (part, bytes)) in parts.iter().enumerate() {
        if bytes.is_empty() {
            rows.push((part, seq as u32, 0, &[]));
        }
        for (c, piece) in bytes.chunks(chunk).enumerate() {
            rows.push((part, seq as u32, c as u32, piece));
        }
    }
    let n = rows.len() as u32;
    rows.into_iter()
        .map(|(part, seq, c, bytes)| {
            Ok(RecordBatch::try_new(
                outcome_schema(),
                vec![
                    Arc::new(UInt32Array::from(vec![shard])),
                    Arc::new(UInt32Array::from(vec![n])),
                    Arc::new(StringArray::from(vec![part])),
                    Arc::new(UInt32Array::from(vec![seq])),
                    Arc::new(UInt32Array::from(vec![c])),
                    Arc::new(LargeBinaryArray::from_iter_values([bytes])),
                ],
            )?)
        })
        .collect()
}

/// What a verify task's answer holds.
const ANSWER: &str = "verify";

/// A verify task's answer (for partition `part`) as record batches of [`outcome_schema`],
/// chunked as an outcome is.
pub(super) fn encode_answer(part: u32, bytes: &[u8]) -> Result<Vec<RecordBatch>> {
    rows_of(part, &[(ANSWER, bytes)], CHUNK)
}

/// The verify tasks' answers from their rows (in any order), in partition order; refused
/// unless each of the `n` partitions answered once, whole.
pub(super) fn answers(batches: &[RecordBatch], n: usize) -> Result<Vec<Vec<u8>>> {
    let mut arrivals = Arrivals::default();
    let mut out = Vec::new();
    for batch in batches {
        for (_, parts) in arrivals.add(batch)? {
            match <[Part; 1]>::try_from(parts) {
                Ok([(part, bytes)]) if part == ANSWER => out.push(bytes),
                _ => bail!("a partition's check came back in another shape: the cluster runs another build of relanon"),
            }
        }
    }
    if out.len() != n {
        bail!("{} of {n} partitions' checks came back whole", out.len());
    }
    Ok(out)
}

/// One part of an encoded outcome: what it holds, its bytes.
type Part = (String, Vec<u8>);

/// One row of an encoded outcome: its part's index, its chunk's, what the part holds, the
/// chunk's bytes.
type Chunk = (u32, u32, String, Vec<u8>);

/// Tasks' answers as their rows arrive, in any order and in batches of any size, handed on
/// in task order: a task's rows are held until it is whole and every task before it is
/// handed on.
#[derive(Default)]
struct Arrivals {
    /// Per task not yet handed on, its rows so far and how many it has.
    held: std::collections::BTreeMap<u32, (Vec<Chunk>, usize)>,
    next: u32,
}

impl Arrivals {
    /// Takes `batch`'s rows; returns the answers they complete that are next in order, as
    /// their parts.
    fn add(&mut self, batch: &RecordBatch) -> Result<Vec<(u32, Vec<Part>)>> {
        let shard = column::<UInt32Array>(batch, 0)?;
        let rows = column::<UInt32Array>(batch, 1)?;
        let part = column::<StringArray>(batch, 2)?;
        let seq = column::<UInt32Array>(batch, 3)?;
        let chunk = column::<UInt32Array>(batch, 4)?;
        let data = column::<LargeBinaryArray>(batch, 5)?;
        for i in 0..batch.num_rows() {
            let s = shard.value(i);
            let held = self.held.entry(s).or_default();
            held.1 = rows.value(i) as usize;
            held.0.push((
                seq.value(i),
                chunk.value(i),
                part.value(i).to_string(),
                data.value(i).to_vec(),
            ));
            if s < self.next || held.0.len() > held.1 {
                bail!("task {} came back twice from the cluster", s + 1);
            }
        }
        let mut out = Vec::new();
        while self
            .held
            .get(&self.next)
            .is_some_and(|(rows, n)| rows.len() == *n)
        {
            let (rows, _) = self.held.remove(&self.next).expect("just looked up");
            out.push((self.next, joined(rows)?));
            self.next += 1;
        }
        Ok(out)
    }
}

/// Outcomes as their rows arrive, handed on in shard order ([`Arrivals`]), so the whole
/// takes them as one machine would.
pub(super) struct Collector<'t> {
    /// The algorithm's options table, which a shard's settled options are read against.
    table: &'t [OptionSpec],
    /// The run's secret seed, which options do not carry over the wire back.
    seed: Option<u64>,
    arrivals: Arrivals,
}

impl<'t> Collector<'t> {
    pub fn new(table: &'t [OptionSpec], seed: Option<u64>) -> Collector<'t> {
        Collector {
            table,
            seed,
            arrivals: Arrivals::default(),
        }
    }

    /// Takes `batch`'s rows; returns the outcomes they complete that are next in order.
    pub fn add(&mut self, batch: &RecordBatch) -> Result<Vec<(u32, Outcome)>> {
        let mut out = Vec::new();
        for (shard, parts) in self.arrivals.add(batch)? {
            let mut outcome = outcome_of(&parts, self.table)?;
            if let Some(used) = &mut outcome.used {
                used.seed = self.seed;
            }
            out.push((shard, outcome));
        }
        Ok(out)
    }

    /// Shards handed on so far; the rest never came whole.
    pub fn done(&self) -> u32 {
        self.arrivals.next
    }
}

/// A shard's chunks, in any order, as its parts in order.
fn joined(mut chunks: Vec<Chunk>) -> Result<Vec<Part>> {
    chunks.sort_by_key(|c| (c.0, c.1));
    let mut parts: Vec<Part> = Vec::new();
    let mut at: Option<(u32, u32)> = None;
    for (seq, chunk, part, bytes) in chunks {
        match at {
            Some((s, c)) if s == seq && c + 1 == chunk => {
                parts.last_mut().expect("a part began").1.extend(bytes);
            }
            _ if chunk == 0 && at.map_or(seq == 0, |(s, _)| s + 1 == seq) => {
                parts.push((part, bytes))
            }
            _ => bail!("a shard's outcome came back with part {seq} chunk {chunk} out of place: the cluster lost or repeated a row"),
        }
        at = Some((seq, chunk));
    }
    Ok(parts)
}

/// One shard's rows: its head, its tables, its suppressed keys.
fn outcome_of(rows: &[Part], table: &[OptionSpec]) -> Result<Outcome> {
    let Some((HEAD, bytes)) = rows.first().map(|(p, d)| (p.as_str(), d.as_slice())) else {
        bail!("a shard's outcome does not start with its head: the cluster runs another build of relanon");
    };
    let head: Head = ciborium::from_reader(bytes).context("reading a shard's outcome")?;
    if head.version != VERSION {
        bail!(
            "a shard's outcome comes from relanon {} and this client is relanon {VERSION}: run one version on the client, the scheduler and every executor",
            head.version
        );
    }
    let batches: Vec<RecordBatch> = rows[1..]
        .iter()
        .filter(|r| r.0 == TABLE)
        .map(|r| from_ipc(&r.1))
        .collect::<Result<_>>()?;
    if batches.len() != head.tables.len() {
        bail!(
            "a shard's outcome names {} tables and holds {}",
            head.tables.len(),
            batches.len()
        );
    }
    let suppressed = match rows[1..].iter().find(|r| r.0 == SUPPRESSED) {
        Some(r) => Some(from_ipc(&r.1)?),
        None => None,
    };
    let tables = head
        .tables
        .into_iter()
        .zip(batches)
        .map(|(h, batch)| ReleaseTable {
            name: h.name,
            batch,
            primary_key: h.primary_key,
            foreign_keys: h.foreign_keys,
        })
        .collect();
    let used = match head.used {
        Some(w) => Some(
            Options::from_wire(table, w)
                .map_err(|e| anyhow!("{e}: the cluster runs another build of relanon"))?,
        ),
        None => None,
    };
    Ok(Outcome {
        materialized: Materialized {
            tables,
            keys: head.keys,
            stats: head.stats,
            ec_sizes: head.ec_sizes,
            suppressed_entities: head.suppressed_entities,
            recoding: head.recoding,
            relocation: head.relocation,
            fragmentation: None,
            fragment_rows: Vec::new(),
        },
        tally: head.tally,
        suppressed,
        used,
        warnings: head.warnings,
    })
}

fn column<A: Array + 'static>(b: &RecordBatch, i: usize) -> Result<&A> {
    b.columns()
        .get(i)
        .and_then(|c| c.as_any().downcast_ref::<A>())
        .ok_or_else(|| {
            anyhow!(
                "a shard's outcome has another shape: the cluster runs another build of relanon"
            )
        })
}

fn cbor<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).context("encoding a shard's task or outcome")?;
    Ok(out)
}

/// `batch` as an Arrow IPC stream (its schema, nullability and metadata with it).
fn ipc(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut w = arrow::ipc::writer::StreamWriter::try_new(Vec::new(), &batch.schema())?;
    w.write(batch)?;
    w.finish()?;
    Ok(w.into_inner()?)
}

fn from_ipc(bytes: &[u8]) -> Result<RecordBatch> {
    let reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok(arrow::compute::concat_batches(&schema, &batches)?)
}

/// What a failed job says, without the wrappers each hop adds: a task's own message is the
/// innermost `External("...")` (or a Parquet reader's `General("...")`) Ballista's
/// scheduler quotes in its debug form (a task that could not read the warehouse says so
/// there), and a plan the scheduler refused is the
/// `message: "..."` of its gRPC status, less the prefixes of each layer that passed it on
/// (a plan of another version of relanon says so there); any other error as it is.
pub(super) fn task_error(e: &dyn std::fmt::Display) -> String {
    const OPENERS: [&str; 3] = ["External(\"", "General(\"", "message: \""];
    const LAYERS: [&str; 3] = [
        "Could not parse plan: ",
        "DataFusion error: ",
        "Error during planning: ",
    ];
    let text = e.to_string();
    let Some((at, opener)) = OPENERS
        .iter()
        .filter_map(|o| text.rfind(o).map(|at| (at, *o)))
        .max_by_key(|(at, _)| *at)
    else {
        return text;
    };
    let mut inner = String::new();
    let mut chars = text[at + opener.len()..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => inner.extend(chars.next()),
            '"' => {
                let mut own = inner.as_str();
                while let Some(rest) = LAYERS.iter().find_map(|l| own.strip_prefix(l)) {
                    own = rest;
                }
                return own.to_string();
            }
            c => inner.push(c),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

    fn outcome(rows: i64) -> Outcome {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from_iter((0..rows).map(Some)))],
        )
        .expect("one column of its type");
        Outcome {
            materialized: Materialized {
                tables: vec![ReleaseTable {
                    name: "person".into(),
                    batch: batch.clone(),
                    primary_key: vec!["id".into()],
                    foreign_keys: Vec::new(),
                }],
                keys: KeyMap::default(),
                stats: vec![TableStats {
                    name: "person".into(),
                    rows_in: 3,
                    released: 3,
                    suppressed: 0,
                    orphans_dropped: 0,
                    no_parent: 0,
                    lm_sum: 0.1 + 0.2,
                    lm_sum_by_column: vec![("age".into(), 1.0 / 3.0)],
                    qi_columns: 1,
                }],
                ec_sizes: vec![3],
                suppressed_entities: 0,
                recoding: Vec::new(),
                relocation: None,
                fragmentation: None,
                fragment_rows: Vec::new(),
            },
            tally: TallyPiece::default(),
            suppressed: Some(batch.slice(0, 1)),
            used: None,
            warnings: vec!["w".into()],
        }
    }

    fn one_batch(batches: &[RecordBatch]) -> RecordBatch {
        arrow::compute::concat_batches(&outcome_schema(), batches).expect("one schema")
    }

    #[test]
    fn an_outcome_comes_back_whole_and_by_shard() {
        let a = one_batch(&encode_outcome(1, outcome(3)).expect("encodes"));
        let b = one_batch(&encode_outcome(0, outcome(2)).expect("encodes"));
        let mut c = Collector::new(&[], None);
        // Shard 1 whole, then shard 0 in two batches: nothing is handed on before shard 0
        // is whole, then both in order.
        assert!(c.add(&a).expect("takes").is_empty());
        assert!(c.add(&b.slice(0, 1)).expect("takes").is_empty());
        let back = c.add(&b.slice(1, b.num_rows() - 1)).expect("takes");
        assert_eq!(back.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(c.done(), 2);
        assert!(c.add(&b).is_err(), "a shard twice is refused");
        let (_, o) = &back[1];
        let t = &o.materialized.tables[0];
        assert_eq!((t.name.as_str(), t.batch.num_rows()), ("person", 3));
        // Bit for bit, not to the nearest printed digit.
        assert_eq!(
            o.materialized.stats[0].lm_sum.to_bits(),
            (0.1f64 + 0.2).to_bits()
        );
        assert_eq!(o.materialized.stats[0].lm_sum_by_column[0].1, 1.0 / 3.0);
        assert_eq!(o.suppressed.as_ref().map(|s| s.num_rows()), Some(1));
        assert_eq!(o.warnings, ["w"]);
    }

    #[test]
    fn a_large_outcome_goes_in_chunks_that_may_arrive_in_any_order() {
        let whole = one_batch(&encode_outcome(0, outcome(5000)).expect("encodes"));
        let batches = encode_outcome_in(0, outcome(5000), 1000).expect("encodes");
        assert!(batches.len() > whole.num_rows(), "{}", batches.len());
        for b in &batches {
            assert_eq!(b.num_rows(), 1);
            assert!(
                column::<LargeBinaryArray>(b, 5)
                    .expect("data")
                    .value(0)
                    .len()
                    <= 1000
            );
        }
        let mut c = Collector::new(&[], None);
        let (last, rest) = batches.split_last().expect("chunks");
        for b in rest.iter().rev() {
            assert!(c.add(b).expect("takes").is_empty());
        }
        let back = c.add(last).expect("takes");
        let t = &back[0].1.materialized.tables[0];
        assert_eq!(t.batch.num_rows(), 5000);
        // A chunk lost (another arrives twice in its place) is refused, not glued.
        let mut c = Collector::new(&[], None);
        let mut bad = batches.clone();
        bad[1] = bad[2].clone();
        let err = bad
            .iter()
            .try_for_each(|b| c.add(b).map(|_| ()))
            .expect_err("refused");
        assert!(err.to_string().contains("out of place"), "{err}");
    }

    #[test]
    fn verify_answers_come_back_in_partition_order_each_once() {
        let bytes = |p: u8| vec![p; 2500];
        // Partition 1 in three chunks, partition 0 in one, arriving out of order.
        let mut batches = rows_of(1, &[(ANSWER, &bytes(1))], 1000).expect("encodes");
        batches.reverse();
        batches.extend(encode_answer(0, &bytes(0)).expect("encodes"));
        let back = answers(&batches, 2).expect("both whole");
        assert_eq!(back, [bytes(0), bytes(1)]);
        // A partition that never came is refused, not taken as passed.
        let err = answers(&batches, 3).expect_err("one missing");
        assert!(err.to_string().contains("2 of 3"), "{err}");
        // Twice is refused.
        let mut twice = batches.clone();
        twice.extend(rows_of(0, &[(ANSWER, &bytes(0))], 4000).expect("encodes"));
        assert!(answers(&twice, 2).is_err());
        // A shard's outcome is not an answer.
        let outcome = encode_outcome(0, outcome(2)).expect("encodes");
        assert!(answers(&outcome, 1).is_err());
    }

    #[test]
    fn a_verify_job_from_another_version_is_refused() {
        let req = Request {
            with: Some("k = 3".into()),
            ..Request::default()
        };
        let p = std::path::Path::new("x");
        let bytes = VerifyJob::encode_for(&req, p, [p, p, p]).expect("encodes");
        let job = VerifyJob::decode(&bytes).expect("this version");
        assert!(job.release.is_absolute() && job.assignment.is_absolute());
        let back = job.request();
        assert_eq!(back.with.as_deref(), Some("k = 3"));
        assert_eq!(back.source.as_deref(), Some(job.source.as_path()));
        let mut other = job;
        other.version = "0.0.0-other".into();
        let err = VerifyJob::decode(&cbor(&other).expect("encodes")).expect_err("refused");
        assert!(err.to_string().contains("0.0.0-other"), "{err}");
    }

    #[test]
    fn a_job_from_another_version_is_refused() {
        let req = Request {
            with: Some("k = 3".into()),
            ..Request::default()
        };
        let bytes = Job::encode_for(
            &req,
            std::path::Path::new("w"),
            4,
            &[],
            &Tally::default(),
            &ShardFiles {
                dir: "s".into(),
                tables: vec![(0, "t".into())],
            },
        )
        .expect("encodes");
        let mut job = Job::decode(&bytes).expect("decodes");
        assert_eq!((job.shards, job.with.as_deref()), (4, Some("k = 3")));
        assert_eq!(job.files.tables, [(0, "t".to_string())]);
        assert!(job.source.is_absolute(), "{}", job.source.display());
        let again = job.request();
        assert_eq!(again.with.as_deref(), Some("k = 3"));
        assert_eq!(again.source.as_deref(), Some(job.source.as_path()));
        assert!(again.base.is_absolute(), "{}", again.base.display());
        job.version = "0.0.0-other".into();
        let err = Job::decode(&cbor(&job).expect("encodes")).expect_err("refused");
        assert!(err.to_string().contains("0.0.0-other"), "{err}");
    }

    #[test]
    fn a_failed_tasks_own_message_is_told_without_its_wrappers() {
        let job = r#"Execution error: Job 038H failed: Job failed due to stage 1 failed: Task failed due to runtime execution error: DataFusionError(Shared(External(DataFusionError(External("preparing shard 1 on an executor: directory '/w/a \"b\"' holds no .parquet files")))))"#;
        assert_eq!(
            task_error(&job),
            "preparing shard 1 on an executor: directory '/w/a \"b\"' holds no .parquet files"
        );
        assert_eq!(task_error(&"connection refused"), "connection refused");
        let unread = r#"Job 038H failed: Task failed due to runtime execution error: DataFusionError(Shared(External(DataFusionError(ParquetError(General("Failed to fetch metadata for file w/c.parquet: not found"))))))"#;
        assert_eq!(
            task_error(&unread),
            "Failed to fetch metadata for file w/c.parquet: not found"
        );
        let refused = r#"Execution error: Status { code: InvalidArgument, message: "Could not parse plan: DataFusion error: Error during planning: a shard's task comes from relanon 0.1.0 and this process is relanon 0.2.0: run one version", metadata: MetadataMap { headers: {"content-type": "application/grpc"} }, source: None }"#;
        assert_eq!(
            task_error(&refused),
            "a shard's task comes from relanon 0.1.0 and this process is relanon 0.2.0: run one version"
        );
        // An unterminated quote is no message of a task's: the error as it is.
        assert_eq!(task_error(&"External(\"cut"), "External(\"cut");
    }
}
