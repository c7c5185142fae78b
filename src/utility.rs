//! What a release is still good for (000 Sec. 2.4 and 3.5): the accuracy of random count
//! queries, the KL-divergence of every sensitive column's distribution, and suppression
//! accuracy. LM lives in [`crate::report`].
//!
//! Count queries are SQL run through DataFusion on the source and on the release. A query
//! counts the rows of one family table (any depth) joined up its FK chain to the entity,
//! weighted by predicates on QIs or sensitive columns of that table or its ancestors. A
//! generalized value answers a QI predicate by spreading uniformly over its leaves: a released
//! `g` counts `|leaves(g) ∩ leaves(h)| / |leaves(g)|` towards "value under `h`"; sensitive
//! values are published as they are and answer exactly. The same counts run on both sides
//! (the release joined on its released keys), so the only difference is the release.
//!
//! QI predicates read a hidden code column per QI (the hierarchy node of the cell: the
//! source's leaf, the release's label looked up once per cell) through one scalar UDF per
//! predicate that indexes a weight per node. Writing the weights into the SQL instead (an
//! `IN` list of every label under the node) makes the text grow with the hierarchy, and with
//! 200 000 part keys under six part-type groups, DataFusion spent minutes planning it.
//!
//! Each table's SELECT runs as its own task on each side, so planning uses every thread; each
//! runs on one partition, so a SUM adds its rows in one order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float64Array, StringArray, UInt32Array};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod fragments;

use crate::algo::Output;
use crate::forest::{Forest, TableNodes};
use crate::hierarchy::Hierarchy;
use crate::plan::{ColumnRole, Plan};
use crate::release::Materialized;
use crate::warehouse::{quote_ident, render_value, ReleaseTable, Scratch};

#[derive(Debug, thiserror::Error)]
#[error("utility queries: {0}")]
pub struct UtilityError(String);

fn fail(e: impl std::fmt::Display) -> UtilityError {
    UtilityError(e.to_string())
}

/// The utility section of report.json.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Utility {
    /// 000 Sec. 2.4: mean over queries of `1 - |Y - X| / X` (1 is perfect; can be negative).
    pub query_accuracy: Option<f64>,
    /// The same mean per depth of the counted table (0 = entity table).
    pub query_accuracy_by_depth: Vec<Option<f64>>,
    pub queries: usize,
    /// Mean over sensitive columns of KL(release || source) (000 Sec. 2.4), natural log.
    pub kl_divergence: Option<f64>,
    /// Per sensitive column; `None` when the release keeps no row of its table.
    pub kl_by_column: BTreeMap<String, Option<f64>>,
    /// 000 Sec. 3.5: mean over source entities of released / source vertices, in percent.
    pub suppression_accuracy: f64,
    /// A vertical fragmentation's query accuracy split: queries whose predicates read one
    /// fragment (and the class), and those reading both, answered under independence within
    /// the class. (Absent from other reports.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment_queries: Option<FragmentQueries>,
}

/// [`Utility::fragment_queries`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FragmentQueries {
    pub within_one: Option<f64>,
    pub within_one_count: usize,
    pub across: Option<f64>,
    pub across_count: usize,
}

/// Every utility measure of one release.
pub async fn measure(
    plan: &Plan,
    forest: &Forest,
    output: &Output,
    released: &Materialized,
) -> Result<Utility, UtilityError> {
    let kept = output.kept();
    let (kl_divergence, kl_by_column) = kl(forest, kept);
    let suppression_accuracy = suppression_accuracy(forest, kept);
    let queries = random_queries(plan, forest, plan.params.queries, plan.params.query_seed);
    let mut fragment_queries = None;
    let (query_accuracy, query_accuracy_by_depth) = match output {
        Output::Generalized(_) => query_accuracy(plan, forest, released, &queries).await?,
        Output::Anatomized(a) => expected_accuracy(plan, forest, a, &queries),
        Output::Fragmented(f) => {
            let answered = fragments::answers(forest, f, &queries);
            fragment_queries = Some(fragments::split(&answered));
            let (x, y): (Vec<f64>, Vec<f64>) = answered.iter().map(|a| (a.0, a.1)).unzip();
            score(plan, &queries, &x, &y)
        }
    };
    Ok(Utility {
        query_accuracy,
        query_accuracy_by_depth,
        queries: queries.len(),
        kl_divergence,
        kl_by_column,
        suppression_accuracy,
        fragment_queries,
    })
}

/// KL(P || Q) per sensitive column, P the release's distribution, Q the source's (000
/// Sec. 2.4); the mean over the columns where it is defined.
fn kl(forest: &Forest, kept: &[Vec<bool>]) -> (Option<f64>, BTreeMap<String, Option<f64>>) {
    let mut tally = Tally::default();
    tally.count_labels(forest, kept, false);
    tally.kl()
}

/// One piece's share of a [`Tally`] ([`Tally::piece`]).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TallyPiece {
    /// Per sensitive column, per label: (release, source) rows of the piece.
    counts: BTreeMap<String, BTreeMap<String, (usize, usize)>>,
    shares: f64,
    /// Per query, its answer on the piece's source and on its release.
    answers: (Vec<f64>, Vec<f64>),
    again: bool,
}

/// The measures a run made in pieces (shards) adds up piece by piece: the label counts of
/// KL-divergence, the sum of the suppression accuracy's per-entity shares, and each count
/// query's answers on source and release (a count over the whole is the sum of the pieces'
/// counts). The queries are drawn once, around rows of a sample of the entities' trees.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// Per sensitive column, per label: (release, source) rows.
    counts: BTreeMap<String, BTreeMap<String, (usize, usize)>>,
    /// Sum over entities of the share of their vertices kept.
    shares: f64,
    queries: Vec<Query>,
    /// Per query, its answer on the source and on the release so far.
    answers: (Vec<f64>, Vec<f64>),
}

impl Tally {
    /// Draws the count queries around rows of `sample`, trees of entities drawn uniformly
    /// from the whole (in hierarchies built over the whole, as every piece is).
    pub fn draw(&mut self, plan: &Plan, sample: &Forest) {
        self.queries = random_queries(plan, sample, plan.params.queries, plan.params.query_seed);
        self.answers = (vec![0.0; self.queries.len()], vec![0.0; self.queries.len()]);
    }

    /// One piece's share of the tallies: its forest and what it keeps, its released tables.
    /// `again`: its entities were counted by the pieces before (which suppressed them whole),
    /// so only what it keeps counts. It needs only the drawn queries, so a piece may be
    /// tallied where it is anonymized; [`Tally::absorb`] adds it in piece order.
    pub async fn piece(
        &self,
        plan: &Plan,
        forest: &Forest,
        kept: &[Vec<bool>],
        released: &[ReleaseTable],
        again: bool,
    ) -> Result<TallyPiece, UtilityError> {
        let mut labels = Tally::default();
        labels.count_labels(forest, kept, again);
        Ok(TallyPiece {
            counts: labels.counts,
            shares: kept_shares(forest, kept),
            answers: answers(plan, forest, released, &self.queries).await?,
            again,
        })
    }

    /// Adds one piece's share. The sums of reals are taken piece after piece in the order
    /// the pieces come, so a run's measures do not depend on where the pieces were tallied.
    pub fn absorb(&mut self, piece: TallyPiece) {
        for (column, labels) in piece.counts {
            let held = self.counts.entry(column).or_default();
            for (label, (p, q)) in labels {
                let (hp, hq) = held.entry(label).or_insert((0, 0));
                *hp += p;
                *hq += q;
            }
        }
        self.shares += piece.shares;
        let (x, y) = piece.answers;
        for (i, (xi, yi)) in x.into_iter().zip(y).enumerate() {
            if !piece.again {
                self.answers.0[i] += xi;
            }
            self.answers.1[i] += yi;
        }
    }

    // Counted by label: the entries of a split table (plan::Part) are one column with codes
    // of their own.
    fn count_labels(&mut self, forest: &Forest, kept: &[Vec<bool>], again: bool) {
        for (t, keep) in forest.tables.iter().zip(kept) {
            for col in &t.sensitive {
                let column = self.counts.entry(col.column.clone()).or_default();
                for (r, &c) in col.codes.iter().enumerate() {
                    let label = &col.labels[c as usize];
                    if !column.contains_key(label) {
                        column.insert(label.clone(), (0, 0));
                    }
                    let (p, q) = column.get_mut(label).expect("inserted above");
                    if !again {
                        *q += 1;
                    }
                    if keep[r] {
                        *p += 1;
                    }
                }
            }
        }
    }

    fn kl(&self) -> (Option<f64>, BTreeMap<String, Option<f64>>) {
        let mut by_column = BTreeMap::new();
        for (column, labels) in &self.counts {
            let (p, q): (Vec<usize>, Vec<usize>) = labels.values().copied().unzip();
            by_column.insert(column.clone(), kl_divergence(&p, &q));
        }
        let defined: Vec<f64> = by_column.values().flatten().copied().collect();
        let mean =
            (!defined.is_empty()).then(|| defined.iter().sum::<f64>() / defined.len() as f64);
        (mean, by_column)
    }

    /// The utility section over every piece of a run of `entities` entities.
    pub fn finish(&self, plan: &Plan, entities: usize) -> Utility {
        let (kl_divergence, kl_by_column) = self.kl();
        let (query_accuracy, query_accuracy_by_depth) =
            score(plan, &self.queries, &self.answers.0, &self.answers.1);
        Utility {
            query_accuracy,
            query_accuracy_by_depth,
            queries: self.queries.len(),
            kl_divergence,
            kl_by_column,
            suppression_accuracy: if entities == 0 {
                100.0
            } else {
                100.0 * self.shares / entities as f64
            },
            fragment_queries: None,
        }
    }
}

/// `sum_i P(i) log(P(i) / Q(i))` over counts; `None` when P is empty. P's support lies in Q's
/// (released rows are source rows), so every term is finite.
fn kl_divergence(p: &[usize], q: &[usize]) -> Option<f64> {
    let (np, nq) = (p.iter().sum::<usize>(), q.iter().sum::<usize>());
    if np == 0 || nq == 0 {
        return None;
    }
    let mut d = 0.0;
    for (&a, &b) in p.iter().zip(q) {
        if a > 0 {
            let (pa, qb) = (a as f64 / np as f64, b as f64 / nq as f64);
            d += pa * (pa / qb).ln();
        }
    }
    Some(d.max(0.0))
}

/// 000 Sec. 3.5: the mean over every source entity of the share of its vertices the release
/// keeps (0 for an entity suppressed whole), in percent.
fn suppression_accuracy(forest: &Forest, kept: &[Vec<bool>]) -> f64 {
    let n = forest.entities();
    if n == 0 {
        return 100.0;
    }
    100.0 * kept_shares(forest, kept) / n as f64
}

/// Sum over the forest's entities of the share of their tree's vertices `kept` keeps.
fn kept_shares(forest: &Forest, kept: &[Vec<bool>]) -> f64 {
    let sizes = tree_sizes(forest, None);
    let published = tree_sizes(forest, Some(kept));
    sizes
        .iter()
        .zip(&published)
        .map(|(&all, &k)| k as f64 / all as f64)
        .sum()
}

/// Vertices of every entity's source tree; with `kept`, only the published ones (a published
/// row's parent is published, so counting up the tree loses none).
fn tree_sizes(forest: &Forest, kept: Option<&[Vec<bool>]>) -> Vec<usize> {
    let mut sizes: Vec<Vec<usize>> = forest
        .tables
        .iter()
        .enumerate()
        .map(|(t, nodes)| {
            (0..nodes.rows())
                .map(|r| usize::from(kept.is_none_or(|k| k[t][r])))
                .collect()
        })
        .collect();
    for ti in (0..forest.tables.len()).rev() {
        for g in &forest.tables[ti].children {
            for r in 0..forest.tables[ti].rows() {
                let below: usize = g
                    .of(r as u32)
                    .iter()
                    .map(|&c| sizes[g.table][c as usize])
                    .sum();
                sizes[ti][r] += below;
            }
        }
    }
    sizes.swap_remove(0)
}

/// One predicate of a count query.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Predicate {
    /// The QI `column` of family table `table` lies under hierarchy node `node`.
    Under { table: usize, qi: usize, node: u32 },
    /// Sensitive column `sa` of `table` has the code `code`; `test` is that condition in
    /// SQL, with [`COLUMN`] for the column (a code is the forest's own, the test holds in
    /// any forest: a run in shards answers a query in every shard).
    Sensitive {
        table: usize,
        sa: usize,
        code: u32,
        test: String,
    },
}

impl Predicate {
    /// The family table whose column the predicate reads.
    fn table(&self) -> usize {
        match *self {
            Predicate::Under { table, .. } | Predicate::Sensitive { table, .. } => table,
        }
    }
}

/// "How many rows of `table` (with their ancestors) satisfy every predicate?"
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Query {
    table: usize,
    predicates: Vec<Predicate>,
}

/// The FK chain from `table` up to the entity table, `table` first.
fn chain(plan: &Plan, table: usize) -> Vec<usize> {
    let mut out = vec![table];
    while let Some(p) = plan.tables[*out.last().expect("starts non-empty")].parent {
        out.push(p);
    }
    out
}

/// `n` seeded random queries. Each is drawn around a random source row of a random table so
/// that its true answer is at least 1: one or two attributes of that row or its ancestors,
/// each as "under a random ancestor of its value" (QIs) or "equal to its value" (SAs).
fn random_queries(plan: &Plan, forest: &Forest, n: usize, seed: u64) -> Vec<Query> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tables: Vec<usize> = (0..forest.tables.len())
        .filter(|&t| forest.tables[t].rows() > 0)
        .collect();
    let mut out = Vec::with_capacity(n);
    if tables.is_empty() {
        return out;
    }
    let mut attempts = 0;
    while out.len() < n && attempts < n * 10 {
        attempts += 1;
        let table = tables[rng.random_range(0..tables.len())];
        let mut row = rng.random_range(0..forest.tables[table].rows()) as u32;
        // The row and its ancestors, with the attributes each offers.
        let mut options: Vec<(usize, u32, bool, usize)> = Vec::new();
        for &t in &chain(plan, table) {
            let nodes = &forest.tables[t];
            options.extend((0..nodes.nqi()).map(|q| (t, row, true, q)));
            options.extend((0..nodes.sensitive.len()).map(|s| (t, row, false, s)));
            row = nodes.parent.get(row as usize).copied().unwrap_or(u32::MAX);
        }
        if options.is_empty() {
            continue;
        }
        let want = rng.random_range(1..=options.len().min(2));
        let mut predicates = Vec::with_capacity(want);
        for _ in 0..want {
            let (t, r, is_qi, i) = options.swap_remove(rng.random_range(0..options.len()));
            let nodes = &forest.tables[t];
            predicates.push(if is_qi {
                let h = &nodes.hierarchies[i];
                let mut path = vec![nodes.codes(r)[i]];
                while let Some(&last) = path.last() {
                    let p = h.parent(last);
                    if p == last || p == h.root() {
                        break;
                    }
                    path.push(p);
                }
                Predicate::Under {
                    table: t,
                    qi: i,
                    node: path[rng.random_range(0..path.len())],
                }
            } else {
                let code = nodes.sa(i, r);
                Predicate::Sensitive {
                    table: t,
                    sa: i,
                    code,
                    test: sensitive_test(plan, forest, (t, i, code)),
                }
            });
        }
        out.push(Query { table, predicates });
    }
    out
}

/// Runs every query on the source and the release; the mean accuracy overall and per depth.
async fn query_accuracy(
    plan: &Plan,
    forest: &Forest,
    released: &Materialized,
    queries: &[Query],
) -> Result<(Option<f64>, Vec<Option<f64>>), UtilityError> {
    let (x, y) = answers(plan, forest, &released.tables, queries).await?;
    Ok(score(plan, queries, &x, &y))
}

/// Each query's answer on the source (`forest`) and on its release, in query order. Each
/// table's SELECT runs as its own task on each side, so that DataFusion's planning of these
/// wide SELECTs (most of this phase in a profile of W1) runs on every thread.
async fn answers(
    plan: &Plan,
    forest: &Forest,
    released: &[ReleaseTable],
    queries: &[Query],
) -> Result<(Vec<f64>, Vec<f64>), UtilityError> {
    let (mut x, mut y) = (vec![0.0; queries.len()], vec![0.0; queries.len()]);
    if queries.is_empty() {
        return Ok((x, y));
    }
    let source = context();
    let release = context();
    for ti in 0..forest.tables.len() {
        let name = &plan.tables[ti].name;
        let nodes = &forest.tables[ti];
        register(&source, &entry_name(plan, ti), source_with_codes(nodes)?)?;
        let batch = released
            .iter()
            .find(|t| &t.name == name)
            .map(|t| &t.batch)
            .ok_or_else(|| fail(format!("release has no table {name}")))?;
        // The entries of a split table each hold their share of its released rows.
        let batch = match &plan.tables[ti].part {
            Some(part) => {
                let keep = part.mask(batch, true).map_err(fail)?;
                filter_record_batch(batch, &keep).map_err(fail)?
            }
            None => batch.clone(),
        };
        register(
            &release,
            &entry_name(plan, ti),
            release_with_codes(plan, nodes, ti, &batch)?,
        )?;
    }
    let mut udfs = 0;
    let mut runs = Vec::new();
    for table in 0..plan.tables.len() {
        let mine: Vec<usize> = (0..queries.len())
            .filter(|&i| queries[i].table == table)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let asked: Vec<&Query> = mine.iter().map(|&i| &queries[i]).collect();
        let (source_sql, release_sql, weights) =
            counting_sql(plan, forest, table, &asked, &mut udfs);
        for (name, w) in weights {
            let udf = under_udf(&name, w);
            source.add_function(udf.clone());
            release.add_function(udf);
        }
        let side = |ctx: &Scratch, sql: String| {
            let ctx = ctx.clone();
            tokio::spawn(async move { sums(&ctx, &sql).await })
        };
        runs.push((mine, side(&source, source_sql), side(&release, release_sql)));
    }
    for (mine, xs, ys) in runs {
        let xs = xs.await.map_err(fail)??;
        let ys = ys.await.map_err(fail)??;
        for (k, &i) in mine.iter().enumerate() {
            x[i] = xs.get(k).copied().unwrap_or(0.0);
            y[i] = ys.get(k).copied().unwrap_or(0.0);
        }
    }
    Ok((x, y))
}

/// The mean accuracy `1 - |Y - X| / X` over the queries whose true answer `X` is above 0,
/// overall and per depth of the counted table.
fn score(plan: &Plan, queries: &[Query], x: &[f64], y: &[f64]) -> (Option<f64>, Vec<Option<f64>>) {
    let depth: Vec<usize> = (0..plan.tables.len())
        .map(|t| chain(plan, t).len() - 1)
        .collect();
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    let mut scores: Vec<Vec<f64>> = vec![Vec::new(); max_depth + 1];
    for ((q, xi), yi) in queries.iter().zip(x).zip(y) {
        if *xi > 0.0 {
            scores[depth[q.table]].push(1.0 - (yi - xi).abs() / xi);
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let all: Vec<f64> = scores.iter().flatten().copied().collect();
    (mean(&all), scores.iter().map(|s| mean(s)).collect())
}

/// The queries' accuracy on an anatomy (000 Sec. 3.5, spec decision D12): the answer on the
/// release is the count an analyst expects under the adversary's uniform reconstruction.
/// A kept row whose QI predicates hold (QI values are exact) counts the probability that its
/// path's sensitive predicates hold: t-t averages over the group's |G| SA-trees (every
/// bijection of QI-trees to SA-trees is equally likely), v-v multiplies per vertex the share
/// of its slot's SA group that satisfies them (slots are reconstructed independently). The
/// two differ only for predicates on two vertices of one person. Computed from the groups,
/// whose slots hold exactly the multisets the SA side publishes; the source count is the
/// same row count the SQL path takes.
fn expected_accuracy(
    plan: &Plan,
    forest: &Forest,
    a: &crate::algo::Anatomization,
    queries: &[Query],
) -> (Option<f64>, Vec<Option<f64>>) {
    use rayon::prelude::*;
    let depth: Vec<usize> = (0..plan.tables.len())
        .map(|t| chain(plan, t).len() - 1)
        .collect();
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    // Global slot -> (group, slot within the group).
    let slot_at: Vec<(usize, usize)> = a
        .anatomy
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| (0..group.slots.len()).map(move |s| (g, s)))
        .collect();
    let scored: Vec<(usize, f64)> = queries
        .par_iter()
        .filter_map(|q| {
            let up = chain(plan, q.table);
            let (mut x, mut y) = (0.0, 0.0);
            let mut path = vec![0u32; up.len()];
            for r in 0..forest.tables[q.table].rows() as u32 {
                let mut row = r;
                for (i, &t) in up.iter().enumerate() {
                    path[i] = row;
                    row = forest.tables[t]
                        .parent
                        .get(row as usize)
                        .copied()
                        .unwrap_or(0);
                }
                let at = |t: usize| path[up.iter().position(|&u| u == t).expect("on the chain")];
                let qi_holds = q.predicates.iter().all(|p| match *p {
                    Predicate::Under { table, qi, node } => {
                        let nodes = &forest.tables[table];
                        nodes.hierarchies[qi].lca(nodes.codes(at(table))[qi], node) == node
                    }
                    Predicate::Sensitive { .. } => true,
                });
                if !qi_holds {
                    continue;
                }
                let source = q.predicates.iter().all(|p| match *p {
                    Predicate::Sensitive {
                        table, sa, code, ..
                    } => forest.tables[table].sa(sa, at(table)) == code,
                    Predicate::Under { .. } => true,
                });
                x += f64::from(u8::from(source));
                if a.kept[q.table][r as usize] {
                    y += expected(forest, a, &slot_at, &q.predicates, &at);
                }
            }
            (x > 0.0).then(|| (depth[q.table], 1.0 - (y - x).abs() / x))
        })
        .collect();
    let mut scores: Vec<Vec<f64>> = vec![Vec::new(); max_depth + 1];
    for (d, s) in scored {
        scores[d].push(s);
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let all: Vec<f64> = scores.iter().flatten().copied().collect();
    (mean(&all), scores.iter().map(|s| mean(s)).collect())
}

/// A vertex of a query's path: its table, its slot in the group, the (column, code) asked.
type Vertex = (usize, usize, Vec<(usize, u32)>);

/// The probability that a kept path's sensitive predicates hold after the adversary's
/// reconstruction (see [`expected_accuracy`]); `at(t)` is the path's row of table `t`.
fn expected(
    forest: &Forest,
    a: &crate::algo::Anatomization,
    slot_at: &[(usize, usize)],
    predicates: &[Predicate],
    at: &dyn Fn(usize) -> u32,
) -> f64 {
    // (table, its slot in the group, predicates on it).
    let mut vertices: Vec<Vertex> = Vec::new();
    let mut group = None;
    for p in predicates {
        if let Predicate::Sensitive {
            table, sa, code, ..
        } = *p
        {
            let (g, s) = slot_at[a.slot_of[table][at(table) as usize] as usize];
            group = Some(g);
            match vertices.iter_mut().find(|v| v.0 == table) {
                Some(v) => v.2.push((sa, code)),
                None => vertices.push((table, s, vec![(sa, code)])),
            }
        }
    }
    let Some(g) = group else {
        return 1.0;
    };
    let slots = &a.anatomy.groups[g].slots;
    let size = a.anatomy.groups[g].members.len();
    let holds = |table: usize, slot: usize, preds: &[(usize, u32)], member: usize| {
        let row = slots[slot].rows[member];
        preds
            .iter()
            .all(|&(sa, code)| forest.tables[table].sa(sa, row) == code)
    };
    match a.variant {
        crate::plan::Variant::TreeTree => {
            let trees = (0..size)
                .filter(|&i| vertices.iter().all(|(t, s, p)| holds(*t, *s, p, i)))
                .count();
            trees as f64 / size as f64
        }
        crate::plan::Variant::VertexVertex => vertices
            .iter()
            .map(|(t, s, p)| {
                (0..size).filter(|&i| holds(*t, *s, p, i)).count() as f64 / size as f64
            })
            .product(),
    }
}

/// The name a plan entry is registered under: the table's, or for the second entry of a split
/// table (plan::Part) one no source table can have.
fn entry_name(plan: &Plan, ti: usize) -> String {
    match &plan.tables[ti].part {
        Some(p) if p.null_side => format!("__relanon_part_{ti}"),
        _ => plan.tables[ti].name.clone(),
    }
}

/// A context whose plans run on one partition: a SUM then adds its rows in one order
/// whatever the thread count, so the report's accuracies are the same to the last bit. The
/// SELECTs run side by side as tasks instead.
fn context() -> Scratch {
    Scratch::new(1)
}

fn register(ctx: &Scratch, name: &str, batch: RecordBatch) -> Result<(), UtilityError> {
    ctx.add(name, batch).map_err(fail)
}

/// The hidden column holding the hierarchy node of QI `q`'s cell.
fn code_column(q: usize) -> String {
    format!("__relanon_qi{q}")
}

/// `batch` with one code column per QI appended.
fn with_codes(batch: &RecordBatch, codes: Vec<UInt32Array>) -> Result<RecordBatch, UtilityError> {
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for (q, c) in codes.into_iter().enumerate() {
        fields.push(Field::new(code_column(q), DataType::UInt32, true));
        columns.push(Arc::new(c));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(fail)
}

/// A family table's source rows with each QI's leaf code beside them.
fn source_with_codes(nodes: &TableNodes) -> Result<RecordBatch, UtilityError> {
    let codes = (0..nodes.nqi())
        .map(|q| {
            (0..nodes.rows() as u32)
                .map(|r| Some(nodes.codes(r)[q]))
                .collect()
        })
        .collect();
    with_codes(&nodes.batch, codes)
}

/// A released table with each QI label's hierarchy node beside it (NULL for a label the
/// hierarchy does not have, which then counts towards no predicate).
fn release_with_codes(
    plan: &Plan,
    nodes: &TableNodes,
    ti: usize,
    batch: &RecordBatch,
) -> Result<RecordBatch, UtilityError> {
    let mut codes = Vec::with_capacity(nodes.nqi());
    for ((column, _), h) in plan.tables[ti].qi_columns().zip(&nodes.hierarchies) {
        let by_label: HashMap<Option<&str>, u32> =
            (0..h.len() as u32).map(|c| (h.label(c), c)).collect();
        let cells = batch.column_by_name(column).ok_or_else(|| {
            fail(format!(
                "release table {} has no column {column}",
                nodes.name
            ))
        })?;
        let cells = cells
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| fail(format!("released {}.{column} is not text", nodes.name)))?;
        codes.push(
            cells
                .iter()
                .map(|label| by_label.get(&label).copied())
                .collect::<UInt32Array>(),
        );
    }
    with_codes(batch, codes)
}

/// The scalar function `name(code)`: the weight of hierarchy node `code` (0 for NULL).
fn under_udf(name: &str, weights: Vec<f64>) -> ScalarUDF {
    let weights = Arc::new(weights);
    let fun = move |args: &[ColumnarValue]| -> datafusion::error::Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(args)?;
        let codes = arrays
            .first()
            .and_then(|a| a.as_any().downcast_ref::<UInt32Array>())
            .ok_or_else(|| {
                datafusion::error::DataFusionError::Internal("code column is not UInt32".into())
            })?;
        let out: Float64Array = codes
            .iter()
            .map(|c| {
                Some(
                    c.and_then(|c| weights.get(c as usize))
                        .copied()
                        .unwrap_or(0.0),
                )
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    };
    create_udf(
        name,
        vec![DataType::UInt32],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(fun),
    )
}

/// One SELECT of `SUM(weight)` per query over `table` joined up its chain, and the UDFs its
/// QI predicates call (name, weight per hierarchy node); `udfs` numbers them across tables.
fn counting_sql(
    plan: &Plan,
    forest: &Forest,
    table: usize,
    queries: &[&Query],
    udfs: &mut usize,
) -> (String, String, Vec<(String, Vec<f64>)>) {
    let chain = chain(plan, table);
    let alias = |t: usize| format!("a{}", chain.iter().position(|&c| c == t).unwrap_or(0));
    // The source joins on its FKs, the release on its released ones (a parent keyed by a
    // surrogate is referenced by one column there).
    let from = |released: bool| {
        let mut from = format!("{} AS a0", quote_ident(&entry_name(plan, table)));
        for (i, w) in chain.windows(2).enumerate() {
            let child = &plan.tables[w[0]];
            let (fk, key) = if released {
                (&child.released_fk, &child.released_parent_key)
            } else {
                (&child.parent_fk, &child.parent_key)
            };
            let on: Vec<String> = fk
                .iter()
                .zip(key)
                .map(|(f, k)| format!("a{i}.{} = a{}.{}", quote_ident(f), i + 1, quote_ident(k)))
                .collect();
            from += &format!(
                " JOIN {} AS a{} ON {}",
                quote_ident(&entry_name(plan, w[1])),
                i + 1,
                on.join(" AND ")
            );
        }
        from
    };
    let mut functions = Vec::new();
    let sums: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let weights: Vec<String> = q
                .predicates
                .iter()
                .map(|p| match *p {
                    Predicate::Under { table, qi, node } => {
                        let name = format!("relanon_under_{udfs}");
                        *udfs += 1;
                        let h = &forest.tables[table].hierarchies[qi];
                        let w = (0..h.len() as u32).map(|g| overlap(h, g, node)).collect();
                        functions.push((name.clone(), w));
                        format!("{name}({}.{})", alias(table), quote_ident(&code_column(qi)))
                    }
                    Predicate::Sensitive {
                        table,
                        sa,
                        ref test,
                        ..
                    } => {
                        let c = format!(
                            "{}.{}",
                            alias(table),
                            quote_ident(&sensitive_name(plan, table, sa))
                        );
                        format!(
                            "CASE WHEN {} THEN 1.0 ELSE 0.0 END",
                            test.replace(COLUMN, &c)
                        )
                    }
                })
                .collect();
            format!(
                "CAST(COALESCE(SUM({}), 0) AS DOUBLE) AS q{i}",
                weights.join(" * ")
            )
        })
        .collect();
    let select = |released: bool| format!("SELECT {} FROM {}", sums.join(", "), from(released));
    (select(false), select(true), functions)
}

/// Where a sensitive predicate's test names its column.
const COLUMN: &str = "\u{1}";

/// The name of sensitive column `sa` of plan table `table`.
fn sensitive_name(plan: &Plan, table: usize, sa: usize) -> String {
    plan.tables[table]
        .columns
        .iter()
        .filter(|c| matches!(c.role, ColumnRole::Sensitive { .. }))
        .nth(sa)
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

/// "Sensitive column `sa` of `table` has code `code`" as a SQL condition on [`COLUMN`]: the
/// code's bucket, or the value the code stands for.
fn sensitive_test(plan: &Plan, forest: &Forest, (table, sa, code): (usize, usize, u32)) -> String {
    let nodes = &forest.tables[table];
    let name = sensitive_name(plan, table, sa);
    let c = COLUMN;
    let buckets = plan.tables[table]
        .columns
        .iter()
        .find_map(|col| match &col.role {
            ColumnRole::Sensitive { buckets: Some(b) } if col.name == name => Some(b.clone()),
            _ => None,
        });
    let col = &nodes.sensitive[sa];
    match buckets {
        Some(b) if (code as usize) + 1 < b.len() => {
            let i = code as usize;
            let upper = if i + 2 == b.len() { "<=" } else { "<" };
            format!("{c} >= {} AND {c} {upper} {}", b[i], b[i + 1])
        }
        Some(_) => format!("{c} IS NULL"),
        None => {
            let row = col.codes.iter().position(|&x| x == code).unwrap_or(0);
            let array = nodes
                .batch
                .column_by_name(&name)
                .expect("a planned sensitive column is in the batch");
            literal_condition(c, array.as_ref(), row)
        }
    }
}

/// `column = <the value of array[row]>` as SQL, typed like the column.
fn literal_condition(column: &str, array: &dyn Array, row: usize) -> String {
    let Some(text) = render_value(array, row) else {
        return format!("{column} IS NULL");
    };
    match array.data_type() {
        t if t.is_numeric() => format!("{column} = {text}"),
        DataType::Boolean => format!("{column} = {}", text.to_ascii_uppercase()),
        _ => format!("{column} = '{}'", text.replace('\'', "''")),
    }
}

/// `|leaves(g) ∩ leaves(h)| / |leaves(g)|`: 1 when `g` lies under `h`, `|leaves(h)| /
/// |leaves(g)|` when `g` is above `h`, 0 otherwise.
fn overlap(h: &Hierarchy, g: u32, node: u32) -> f64 {
    let lca = h.lca(g, node);
    if lca == node {
        1.0
    } else if lca == g {
        f64::from(h.leaf_count(node)) / f64::from(h.leaf_count(g).max(1))
    } else {
        0.0
    }
}

/// The one row of a SUM query as numbers.
async fn sums(ctx: &Scratch, sql: &str) -> Result<Vec<f64>, UtilityError> {
    let batches = ctx.sql(sql).await.map_err(fail)?;
    let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(Vec::new());
    };
    (0..b.num_columns())
        .map(|i| {
            b.column(i)
                .as_any()
                .downcast_ref::<Float64Array>()
                .map(|a| if a.is_null(0) { 0.0 } else { a.value(0) })
                .ok_or_else(|| fail("SUM did not return a DOUBLE"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generalization of `forest` keeping every entity and two child rows in three (never
    /// a row under a suppressed one), each first QI generalized one level.
    fn some_generalization(plan: &Plan, forest: &Forest) -> crate::algo::Generalization {
        let mut g = crate::algo::Generalization::empty(forest);
        for t in 0..forest.tables.len() {
            for r in 0..forest.tables[t].rows() {
                let up = plan.tables[t].parent;
                let parent_kept = up.is_none_or(|p| g.kept[p][forest.tables[t].parent[r] as usize]);
                g.kept[t][r] = parent_kept && (t == 0 || r % 3 != 0);
                let nqi = forest.tables[t].nqi();
                if nqi > 0 {
                    let h = &forest.tables[t].hierarchies[0];
                    g.codes[t][r * nqi] = h.parent(g.codes[t][r * nqi]);
                }
            }
        }
        g
    }

    /// `g` restricted to a subset's rows (`rows[t][i]`: the whole's row of the subset's `i`).
    fn restricted(
        forest: &Forest,
        g: &crate::algo::Generalization,
        rows: &[Vec<u32>],
    ) -> crate::algo::Generalization {
        let mut out = crate::algo::Generalization::empty(forest);
        for (t, mine) in rows.iter().enumerate() {
            let nqi = forest.tables[t].nqi();
            out.kept[t] = mine.iter().map(|&r| g.kept[t][r as usize]).collect();
            out.codes[t] = mine
                .iter()
                .flat_map(|&r| g.codes[t][r as usize * nqi..(r as usize + 1) * nqi].to_vec())
                .collect();
        }
        out
    }

    /// A count over the whole is the sum of its pieces' counts: the queries answered on two
    /// halves of the entities (each with its own release) add up to the whole's answers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn count_queries_answered_in_pieces_add_up_to_the_whole() {
        let (_dir, plan, wh) = crate::forest::tpch_fixture().await;
        let forest = crate::forest::load(&plan, &wh).await.expect("forest");
        let queries = random_queries(&plan, &forest, 60, 7);
        assert!(queries.iter().any(|q| q
            .predicates
            .iter()
            .any(|p| matches!(p, Predicate::Sensitive { .. }))));
        let g = some_generalization(&plan, &forest);
        let release = |f: &Forest, g: crate::algo::Generalization| {
            crate::release::materialize(&plan, f, &Output::Generalized(g)).expect("materialize")
        };
        let whole = release(&forest, g.clone());
        let (x, y) = answers(&plan, &forest, &whole.tables, &queries)
            .await
            .expect("answers");
        let (mut xs, mut ys) = (vec![0.0; queries.len()], vec![0.0; queries.len()]);
        for half in 0..2u32 {
            let entities: Vec<u32> = (0..forest.entities() as u32)
                .filter(|e| e % 2 == half)
                .collect();
            let (piece, rows) = forest.subset(&entities).expect("subset");
            let released = release(&piece, restricted(&piece, &g, &rows));
            let (px, py) = answers(&plan, &piece, &released.tables, &queries)
                .await
                .expect("answers");
            xs.iter_mut().zip(px).for_each(|(a, b)| *a += b);
            ys.iter_mut().zip(py).for_each(|(a, b)| *a += b);
        }
        for i in 0..queries.len() {
            assert!(
                (x[i] - xs[i]).abs() < 1e-6,
                "query {i}: {} vs {}",
                x[i],
                xs[i]
            );
            assert!(
                (y[i] - ys[i]).abs() < 1e-6,
                "query {i}: {} vs {}",
                y[i],
                ys[i]
            );
        }
        assert!(x.iter().all(|&v| v >= 1.0), "drawn around a row: {x:?}");
        assert!(
            x.iter().zip(&y).any(|(a, b)| a != b),
            "the release loses something"
        );
    }

    #[test]
    fn kl_is_zero_for_equal_distributions_and_positive_otherwise() {
        assert_eq!(kl_divergence(&[2, 2], &[4, 4]), Some(0.0));
        let d = kl_divergence(&[3, 1], &[2, 2]).expect("defined");
        let expected = 0.75 * (0.75f64 / 0.5).ln() + 0.25 * (0.25f64 / 0.5).ln();
        assert!((d - expected).abs() < 1e-12);
        assert_eq!(kl_divergence(&[0, 0], &[2, 2]), None);
    }
}
