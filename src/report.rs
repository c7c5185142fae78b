//! report.json: what a release kept and lost (001 Def. 8 LM, Def. 9 DM), its parameters and
//! where the time went. Written beside the release; the verifier cross-checks its counts;
//! `relanon report` reads it back to draw the HTML page ([`crate::html`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::algo::options::OptionValue;
use crate::algo::output::{tt_budget, vv_budget};
use crate::algo::Configured;
use crate::plan::{ColumnRole, KeyPolicy, Model, OrphanPolicy, Plan};
use crate::release::Materialized;
use crate::utility::Utility;
use crate::warehouse::quote_ident;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TableReport {
    pub name: String,
    pub rows_in: usize,
    pub released: usize,
    pub suppressed: usize,
    pub orphans_dropped: usize,
    /// Rows left out for having no parent: a NULL FK (an optional relationship), so they
    /// are about no individual; with their descendants. (Absent from earlier reports.)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub no_parent: usize,
    pub qi_columns: usize,
    /// LM (001 Def. 8) over this table's released QI cells; 0 without QIs.
    pub lm: f64,
    /// LM (001 Def. 8) per QI column over its released cells: which hierarchy paid.
    /// (Absent from reports of earlier versions.)
    #[serde(default)]
    pub lm_by_column: BTreeMap<String, f64>,
    /// Columns published with the source's values (SENSITIVE and INSENSITIVE): what the
    /// release keeps verbatim. (Absent from reports of earlier versions.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged_columns: Vec<String>,
}

impl TableReport {
    /// The share of the table's rows the release left out (0 for an empty table).
    pub fn suppressed_share(&self) -> f64 {
        ratio(
            self.suppressed as f64,
            (self.released + self.suppressed) as f64,
        )
    }
}

/// A table released beside the family (`LABEL TABLE t AS DIMENSION`): published as the
/// source holds it, minus its IDENTIFIER columns.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DimensionReport {
    pub name: String,
    /// Released columns, all with the source's values.
    pub columns: Vec<String>,
    /// IDENTIFIER columns left out.
    pub left_out_columns: Vec<String>,
}

/// The parameters in force: the model, the algorithm with each of its options, the options
/// every algorithm shares. The key seed is never written: it would let anyone replay the key
/// permutation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReportParams {
    pub model: Model,
    pub algorithm: String,
    /// The algorithm's own options, in its table's order (an unset one is left out).
    #[serde(flatten)]
    pub options: AlgorithmOptions,
    pub query_seed: u64,
    pub queries: usize,
    pub keys: KeyPolicy,
    pub orphans: OrphanPolicy,
    /// `KEEP n PERCENT OF t`: the floors the release was held to (the price that met them is
    /// the `suppression_price` above).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<KeepFloor>,
    /// Shards the entities were anonymized in (`--shards`); only the count, never which
    /// entity was in which. (Absent when 1, and from earlier reports.)
    #[serde(default = "one_shard", skip_serializing_if = "is_one_shard")]
    pub shards: usize,
}

fn one_shard() -> usize {
    1
}

fn is_one_shard(n: &usize) -> bool {
    *n == 1
}

/// One `KEEP n PERCENT OF table`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeepFloor {
    pub table: String,
    pub percent: f64,
}

impl ReportParams {
    fn new(plan: &Plan, algorithm: &Configured) -> ReportParams {
        let unread = (algorithm.spec.unread)(plan);
        let options = algorithm
            .options
            .iter()
            .filter(|(name, _)| !unread.contains(name))
            .filter_map(|(name, value)| {
                let json = match value {
                    OptionValue::Number(n) => serde_json::Value::from(n),
                    OptionValue::Count(n) => serde_json::Value::from(n),
                    OptionValue::Choice(c) => serde_json::Value::from(c),
                    OptionValue::Levels(l) => serde_json::Value::from(
                        l.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
                    ),
                    OptionValue::Text(t) => serde_json::Value::from(t.as_str()),
                    OptionValue::Unset => return None,
                };
                Some((name.to_string(), json))
            })
            .collect();
        let p = &plan.params;
        ReportParams {
            model: p.model.clone(),
            algorithm: algorithm.spec.name.to_string(),
            options: AlgorithmOptions(options),
            query_seed: p.query_seed,
            queries: p.queries,
            keys: p.keys,
            orphans: p.orphans,
            keep: p
                .keep
                .iter()
                .map(|k| KeepFloor {
                    table: k.name.clone(),
                    percent: k.percent,
                })
                .collect(),
            shards: algorithm.shards,
        }
    }
}

/// An algorithm's options as `name: value` entries kept in order (whatever algorithm wrote
/// the report, so a report of another version reads back as written).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlgorithmOptions(pub Vec<(String, serde_json::Value)>);

impl serde::Serialize for AlgorithmOptions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for AlgorithmOptions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = AlgorithmOptions;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("the algorithm's options as name: value entries")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, serde_json::Value>()? {
                    out.push((k, v));
                }
                Ok(AlgorithmOptions(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub relanon_version: String,
    pub entity: String,
    pub params: ReportParams,
    pub tables: Vec<TableReport>,
    /// Tables released beside the family. (Absent from reports of earlier versions.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dimensions: Vec<DimensionReport>,
    /// Source tables not released: outside the family and not declared dimensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Rows of every family table the release left out, over the family's rows: the
    /// headline loss, which counts tables without QIs too. (Absent from earlier reports.)
    #[serde(default)]
    pub rows_suppressed_share: f64,
    pub entities: usize,
    pub entities_released: usize,
    pub suppressed_entities: usize,
    /// Global recoding's node (`algorithm = 'lattice'`): every QI column's level and its
    /// hierarchy's height. Empty for local recoding. (Absent from earlier reports.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recoding: Vec<ColumnLevel>,
    pub equivalence_classes: usize,
    pub smallest_ec: Option<usize>,
    /// EC size (entities) -> how many ECs have it. Sizes far above k are utility lost to
    /// clustering, not privacy gained. (Absent from reports of earlier versions.)
    #[serde(default)]
    pub ec_size_histogram: BTreeMap<usize, usize>,
    /// 001 Def. 8 over the released QI cells.
    pub lm: f64,
    /// LM over the source's QI cells with every suppressed cell counted as 1 (fully lost).
    pub lm_with_suppression: f64,
    /// 001 Def. 9: each released entity counts its EC's size; a suppressed entity counts
    /// every entity (it is indistinguishable from all of them).
    pub dm: u64,
    /// Whether the independent verifier accepted the release; false only for a release
    /// committed with `--allow-unverified` (a baseline of 001 Sec. III under study).
    #[serde(default = "verified_by_default")]
    pub verified: bool,
    /// Query accuracy, KL-divergence and suppression accuracy (000 Sec. 2.4, 3.5).
    pub utility: Utility,
    /// Under `model = 'anatomy'`: the groups, the SA side, each rule's worst group and what
    /// the model does not protect. (Absent from other reports.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anatomy: Option<AnatomyReport>,
    /// Under `algorithm = 'hybrid'`: how many QI cells the release publishes untruthfully
    /// (relocated rows), per table, against the budget; never which. (Absent from other
    /// reports.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relocation: Option<RelocationReport>,
    /// Under `algorithm = 'fragment'`: the fragments, which columns each publishes, how
    /// many class cells the repair changed in each, and the strongest link between two
    /// fragments' columns. (Absent from other reports.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<FragmentationReport>,
    /// The fingerprint of the run's key map (`KeyMap::digest`), whether or not it was
    /// written: verify tells a key map from another run by it. (Absent from earlier reports.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_map_digest: Option<String>,
    /// Milliseconds per phase.
    pub timings_ms: BTreeMap<String, f64>,
}

/// A table that keeps fewer than this share of its rows is a warning: every count and sum an
/// analyst runs over it is then wrong by more than a fifth, and no label shows it.
pub const ROWS_KEPT_WARNING: f64 = 0.8;

impl Report {
    /// One warning per family table that kept less than [`ROWS_KEPT_WARNING`] of its rows,
    /// naming what the run could have set to keep more and what that costs.
    pub fn rows_warnings(&self) -> Vec<String> {
        let remedies = self.remedies();
        self.tables
            .iter()
            .filter(|t| t.rows_in > 0)
            .filter(|t| (t.released as f64) < ROWS_KEPT_WARNING * t.rows_in as f64)
            .map(|t| {
                let kept = 100.0 * t.released as f64 / t.rows_in as f64;
                format!(
                    "{} keeps {} of its {} rows ({kept:.0}%): every count and sum over it loses more than a fifth; to keep more, {}",
                    t.name,
                    t.released,
                    t.rows_in,
                    // Quoted, as every identifier relanon writes: the offer is copied as SQL.
                    remedies.replace("{table}", &quote_ident(&t.name))
                )
            })
            .collect()
    }

    /// What this run's algorithm and model offer to keep more rows, cheapest first.
    fn remedies(&self) -> String {
        let option = |name: &str| {
            self.params
                .options
                .0
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let mut offers = Vec::new();
        // Shape order acts on a family with child tables, and for ClusTree and CToff only
        // through their blocking.
        let shape_acts = self.tables.len() > 1
            && (matches!(self.params.algorithm.as_str(), "miracle" | "miraclex")
                || option("candidates").is_some());
        if shape_acts && option("order").is_some_and(|o| o == "key") {
            offers.push(
                "order = 'shape' (the default: people whose trees match share a class; usually no more generalization)".to_string(),
            );
        }
        if let Some(price) = option("suppression_price").and_then(|p| p.as_f64()) {
            offers.push(format!(
                "suppression_price = {} or KEEP 80 PERCENT OF {{table}} (more generalization: `relanon experiment frontier` draws the trade)",
                2.0 * price
            ));
        }
        let (letter, group) = match &self.params.model {
            Model::KAnonymity { k } => ("k", *k),
            Model::LDiversity { l, .. } | Model::Anatomy { l, .. } => ("l", *l),
        };
        offers.push(format!(
            "a smaller {letter} than {group} (a weaker guarantee: `relanon plan` bounds the rows any release keeps)"
        ));
        offers.join(", or ")
    }

    /// Counts the classes as the release shows them (`sizes`: entities per distinct released
    /// tree, from the verifier): two clusters released alike are one class, so the count,
    /// the smallest class, the histogram and DM follow the release, not the clustering.
    pub fn recount_classes(&mut self, sizes: &[usize]) {
        if sizes.is_empty() || sizes.iter().sum::<usize>() != self.entities_released {
            return;
        }
        self.equivalence_classes = sizes.len();
        self.smallest_ec = sizes.iter().copied().min();
        self.ec_size_histogram = histogram(sizes);
        self.dm = sizes.iter().map(|&s| (s * s) as u64).sum::<u64>()
            + (self.suppressed_entities * self.entities) as u64;
    }
}

/// What an anatomy released (000 Ch. 3; the spec's Sec. 3.6).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct AnatomyReport {
    pub variant: String,
    pub l: usize,
    pub groups: usize,
    /// Partitions the entities were grouped within (the one asked for, clamped).
    pub partitions: usize,
    /// The SA side's tables.
    pub sa_tables: Vec<String>,
    pub rules: Vec<RuleReport>,
    /// What anatomy does not protect, for whoever publishes it.
    pub notes: Vec<String>,
}

/// One declared rule over the groups: its worst group (t-t: the share of the group's
/// SA-trees holding the value m times or more; v-v: Pr[Binomial(η, 1/l) ≥ m] with η the
/// group's slots holding it), for the worst value under a rule on every value.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RuleReport {
    pub rule: String,
    pub column: String,
    /// The value (its bucket under BUCKETS) of the worst group; `None` when the rule names
    /// a value no released row holds.
    pub value: Option<String>,
    pub m: u32,
    pub p: String,
    pub worst: f64,
    /// Groups whose share sits exactly at the rule's budget.
    pub groups_at_bound: usize,
}

/// The report's anatomy section, recounted from the groups.
pub fn anatomy_report(
    plan: &Plan,
    forest: &crate::forest::Forest,
    a: &crate::algo::Anatomization,
    sa_tables: Vec<String>,
) -> Option<AnatomyReport> {
    let Model::Anatomy { l, variant, rules } = &plan.params.model else {
        return None;
    };
    let mut out: Vec<RuleReport> = rules
        .iter()
        .map(|r| RuleReport {
            rule: r.name.clone(),
            column: format!("{}.{}", r.table, r.column),
            value: None,
            m: r.m,
            p: r.p.to_string(),
            worst: 0.0,
            groups_at_bound: 0,
        })
        .collect();
    for rule in &a.rules {
        let col = &forest.tables[rule.table].sensitive[rule.column];
        let report = &mut out[rule.declared];
        for g in &a.anatomy.groups {
            let size = g.members.len();
            let holds = |row: u32| col.codes[row as usize] == rule.code;
            let slots = g.slots.iter().filter(|s| s.table == rule.table);
            let (share, at_bound) = match variant {
                crate::plan::Variant::TreeTree => {
                    let heavy = (0..size)
                        .filter(|&i| {
                            slots.clone().filter(|s| holds(s.rows[i])).count() >= rule.m as usize
                        })
                        .count();
                    let budget = tt_budget(rule.p, size as u32) as usize;
                    (heavy as f64 / size as f64, heavy > 0 && heavy == budget)
                }
                crate::plan::Variant::VertexVertex => {
                    let eta = slots.filter(|s| s.rows.iter().any(|&r| holds(r))).count();
                    let at_bound = vv_budget(rule.p, rule.m, *l as u32) == Some(eta as u64);
                    (binomial_tail(eta, *l, rule.m), eta > 0 && at_bound)
                }
            };
            if share > report.worst || report.value.is_none() {
                if share > report.worst {
                    report.worst = share;
                }
                report.value = Some(col.labels[rule.code as usize].clone());
            }
            report.groups_at_bound += usize::from(at_bound);
        }
    }
    Some(AnatomyReport {
        variant: variant.name().to_string(),
        l: *l,
        groups: a.anatomy.groups.len(),
        partitions: a.anatomy.partitions,
        sa_tables,
        rules: out,
        notes: vec![
            "QI values are published exactly: anatomy hides which sensitive values are whose, not who is in the release; the QI side alone may single people out".to_string(),
            "which rows were suppressed depends on sensitive values (collisions in a slot, rule budgets): an adversary who knows a row is missing learns a little about its value".to_string(),
            "an INSENSITIVE column correlated with a sensitive one is on the QI side and weakens the guarantee".to_string(),
        ],
    })
}

/// Pr[Binomial(eta, 1/l) >= m], the share the report shows (whether a group sits at the
/// budget is decided exactly, by the algorithm's own thresholds).
fn binomial_tail(eta: usize, l: usize, m: u32) -> f64 {
    let q = 1.0 / l.max(1) as f64;
    let mut below = 0.0;
    let mut choose = 1.0;
    for j in 0..(m as usize).min(eta + 1) {
        if j > 0 {
            choose = choose * (eta - j + 1) as f64 / j as f64;
        }
        below += choose * q.powi(j as i32) * (1.0 - q).powi((eta - j) as i32);
    }
    (1.0 - below).max(0.0)
}

/// What a hybrid release says it is (003, spec Sec. 3): untruthful by design, within `p`%
/// of the family's QI cells. Which rows or groups were relocated is never said: that would
/// show a statistical adversary exactly what the test hides.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RelocationReport {
    pub variant: String,
    /// The percent of QI cells allowed.
    pub p: f64,
    /// The family's QI cells, suppressed rows' included (what `p` is a percent of).
    pub qi_cells: usize,
    /// The most untruthful cells allowed: `p/100 · qi_cells`, rounded down.
    pub budget_cells: usize,
    /// QI cells published with a label that is neither the source value nor an ancestor.
    pub relocated_cells: usize,
    /// `relocated_cells / qi_cells`.
    pub relocated_share: f64,
    /// Per family table (`table`, relocated cells).
    pub tables: Vec<(String, usize)>,
    /// The statistical variants' test (Pearson's X² of the group sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<crate::algo::output::RelocationTest>,
    /// Relocation instead of suppression: the entities it kept (published, though the
    /// algorithm had suppressed them); hybrid on entity trees: the entities embedded in a
    /// group of a smaller tree (`leftovers = 'embed'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relocated_entities: Option<usize>,
    /// What an analyst must know.
    pub notes: Vec<String>,
}

impl RelocationReport {
    fn of(plan: &Plan, r: &crate::algo::Relocated) -> RelocationReport {
        let relocated: usize = r.cells.iter().sum();
        let mut notes = vec![format!(
            "untruthful by design: up to {}% of the QI cells ({} of {}) may carry another group's labels; this release has {relocated}, and does not say which",
            r.p, r.budget, r.qi_cells
        )];
        notes.push("counts over QI values are off by the relocated rows, and their sensitive and other values stand under labels that are not theirs".to_string());
        if r.variant == crate::algo::output::INSTEAD_OF_SUPPRESSION {
            notes.push("relanon's own relocation instead of suppression (not in the papers): entities the algorithm would have suppressed went whole into their closest classes, so an adversary who knows the algorithm may guess which members of a class were moved".to_string());
        } else if r.variant == "deterministic" || r.variant == "statistical" {
            notes.push("relocated rows went to the closest groups: an adversary who knows the algorithm may guess which (the randomized variants make that harder, without a bound)".to_string());
        }
        let hybrid = r.variant != crate::algo::output::INSTEAD_OF_SUPPRESSION;
        if let Some(n) = r.entities.filter(|_| hybrid) {
            notes.push(format!("{n} entities whose tree shape no k-anonymous group shares were published in a group whose smaller tree fits in theirs (leftovers = 'embed', relanon's extension on entity trees): their other rows are suppressed, and their matched cells count in the relocated ones"));
        }
        RelocationReport {
            variant: r.variant.clone(),
            p: r.p,
            qi_cells: r.qi_cells,
            budget_cells: r.budget,
            relocated_cells: relocated,
            relocated_share: ratio(relocated as f64, r.qi_cells as f64),
            tables: plan
                .tables
                .iter()
                .zip(&r.cells)
                .map(|(t, &n)| (t.name.clone(), n))
                .collect(),
            test: r.test,
            relocated_entities: r.entities,
            notes,
        }
    }

    /// The summary's lines.
    fn lines(&self) -> String {
        // The post-pass of the clustering algorithms is relanon's, not the paper's hybrid.
        let how = if self.variant == crate::algo::output::INSTEAD_OF_SUPPRESSION {
            format!(
                "relocate = {}%, instead of suppressing {} entities",
                self.p,
                self.relocated_entities.unwrap_or(0)
            )
        } else {
            let embedded = self
                .relocated_entities
                .map(|n| format!(", {n} entities embedded in smaller trees"))
                .unwrap_or_default();
            format!("p = {}%, relocation = '{}'{embedded}", self.p, self.variant)
        };
        let mut s = format!(
            "relocated {} of {} QI cells ({:.2}%), budget {} ({how}): untruthful by design
",
            self.relocated_cells,
            self.qi_cells,
            100.0 * self.relocated_share,
            self.budget_cells,
        );
        if self.tables.len() > 1 {
            for (t, n) in &self.tables {
                s += &format!(
                    "  {t:<20} {n:>9} cells relocated
"
                );
            }
        }
        if let Some(t) = &self.test {
            s += &format!(
                "  group sizes: X² {:.3} on {} df, critical {:.3} at alpha = {}
",
                t.x2, t.df, t.critical, t.alpha
            );
        }
        s
    }
}

/// One QI column's level in a global recoding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnLevel {
    /// `table.column`.
    pub column: String,
    /// 0 keeps the value; `height` generalizes it to `*`.
    pub level: u16,
    pub height: u16,
}

/// Per family table, what it kept and lost: rows, LM overall and per QI column, the columns
/// published unchanged.
fn table_reports(plan: &Plan, m: &Materialized) -> Vec<TableReport> {
    m.stats
        .iter()
        .map(|s| TableReport {
            name: s.name.clone(),
            rows_in: s.rows_in,
            released: s.released,
            suppressed: s.suppressed,
            orphans_dropped: s.orphans_dropped,
            no_parent: s.no_parent,
            qi_columns: s.qi_columns,
            lm: ratio(s.lm_sum, (s.released * s.qi_columns) as f64),
            lm_by_column: s
                .lm_sum_by_column
                .iter()
                .map(|(column, sum)| (column.clone(), ratio(*sum, s.released as f64)))
                .collect(),
            unchanged_columns: plan
                .tables
                .iter()
                .find(|t| t.name == s.name)
                .map(|t| {
                    t.columns
                        .iter()
                        .filter(|c| {
                            matches!(
                                c.role,
                                ColumnRole::Sensitive { .. } | ColumnRole::Insensitive
                            )
                        })
                        .map(|c| c.name.clone())
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// The report's fragmentation section: what the release says of its fragments, and what
/// the re-join attack recovered from them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FragmentationReport {
    #[serde(flatten)]
    pub summary: crate::release::FragmentSummary,
    /// What the re-join attack recovers (`attack::rejoin`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejoin: Option<crate::attack::Rejoin>,
}

pub fn build(
    plan: &Plan,
    algorithm: &Configured,
    m: &Materialized,
    utility: Utility,
    timings_ms: BTreeMap<String, f64>,
    anatomy: Option<AnatomyReport>,
    rejoin: Option<crate::attack::Rejoin>,
) -> Report {
    let tables = table_reports(plan, m);
    let dimensions = plan
        .dimensions
        .iter()
        .map(|d| DimensionReport {
            name: d.name.clone(),
            columns: d.released_columns(),
            left_out_columns: d
                .columns
                .iter()
                .filter(|c| c.role == ColumnRole::Identifier)
                .map(|c| c.name.clone())
                .collect(),
        })
        .collect();
    let rows_suppressed: usize = m.stats.iter().map(|s| s.suppressed).sum();
    let rows_released: usize = m.stats.iter().map(|s| s.released).sum();
    let lm_sum: f64 = m.stats.iter().map(|s| s.lm_sum).sum();
    let released_cells: usize = m.stats.iter().map(|s| s.released * s.qi_columns).sum();
    let suppressed_cells: usize = m.stats.iter().map(|s| s.suppressed * s.qi_columns).sum();
    let entities_released: usize = m.ec_sizes.iter().sum();
    let entities = entities_released + m.suppressed_entities;
    let dm = m.ec_sizes.iter().map(|&s| (s * s) as u64).sum::<u64>()
        + (m.suppressed_entities * entities) as u64;
    Report {
        relanon_version: env!("CARGO_PKG_VERSION").to_string(),
        entity: plan.entity.clone(),
        params: ReportParams::new(plan, algorithm),
        tables,
        dimensions,
        left_out: plan.left_out.clone(),
        rows_suppressed_share: ratio(
            rows_suppressed as f64,
            (rows_suppressed + rows_released) as f64,
        ),
        entities,
        entities_released,
        suppressed_entities: m.suppressed_entities,
        recoding: m
            .recoding
            .iter()
            .map(|(column, level, height)| ColumnLevel {
                column: column.clone(),
                level: *level,
                height: *height,
            })
            .collect(),
        equivalence_classes: m.ec_sizes.len(),
        smallest_ec: m.ec_sizes.iter().copied().min(),
        ec_size_histogram: histogram(&m.ec_sizes),
        verified: false,
        lm: ratio(lm_sum, released_cells as f64),
        lm_with_suppression: ratio(
            lm_sum + suppressed_cells as f64,
            (released_cells + suppressed_cells) as f64,
        ),
        dm,
        utility,
        anatomy,
        relocation: m.relocation.as_ref().map(|r| RelocationReport::of(plan, r)),
        fragmentation: m
            .fragmentation
            .clone()
            .map(|summary| FragmentationReport { summary, rejoin }),
        key_map_digest: (!m.keys.tables.is_empty()).then(|| m.keys.digest()),
        timings_ms,
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many times each value occurs.
fn histogram(sizes: &[usize]) -> BTreeMap<usize, usize> {
    let mut h = BTreeMap::new();
    for &s in sizes {
        *h.entry(s).or_insert(0) += 1;
    }
    h
}

/// Reading a report.json back failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read report '{}': {source}; pass the report.json `relanon anonymize` wrote (beside a SQLite release, inside a Parquet one)", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{}' is not a relanon report.json ({source}); pass the report.json `relanon anonymize` wrote, or re-run anonymize to write a fresh one", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Reads a report.json written by [`build`] (via `relanon anonymize`).
pub fn read(path: &Path) -> Result<Report, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReportError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Reports written before the field existed were only ever written for verified releases.
fn verified_by_default() -> bool {
    true
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

impl Report {
    /// The human summary `anonymize` and `demo` print.
    pub fn summary(&self) -> String {
        let classes = if self.anatomy.is_some() {
            "groups"
        } else {
            "equivalence classes"
        };
        let mut s: String = self
            .rows_warnings()
            .iter()
            .map(|w| format!("warning: {w}\n"))
            .collect();
        s += &format!(
            "{} entities: {} released in {} {classes} (smallest {}), {} suppressed\n",
            self.entity,
            self.entities_released,
            self.equivalence_classes,
            self.smallest_ec.map_or("-".to_string(), |n| n.to_string()),
            self.suppressed_entities
        );
        if self.params.shards > 1 {
            s += &format!(
                "  anonymized in {} shards of whole trees\n",
                self.params.shards
            );
        }
        for t in &self.tables {
            s += &format!(
                "  {:<20} {:>9} rows in  {:>9} released  {:>7} suppressed ({:.1}%)  LM {:.3}{}\n",
                t.name,
                t.rows_in,
                t.released,
                t.suppressed,
                100.0 * t.suppressed_share(),
                t.lm,
                match (t.orphans_dropped, t.no_parent) {
                    (0, 0) => String::new(),
                    (o, 0) => format!("  ({o} orphans dropped)"),
                    (0, n) => format!("  ({n} without a parent left out)"),
                    (o, n) => format!("  ({o} orphans dropped, {n} without a parent left out)"),
                }
            );
        }
        s += &self.anatomy_lines();
        s += &self.shape_lines();
        if let Some(r) = &self.relocation {
            s += &r.lines();
        }
        s += &format!(
            "rows suppressed {:.1}% of the family's rows; LM {:.4} (with suppression {:.4}), DM {}\n",
            100.0 * self.rows_suppressed_share,
            self.lm,
            self.lm_with_suppression,
            self.dm
        );
        let u = &self.utility;
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
        // A run in shards answers no count query yet (docs/scale.md).
        let queries = if u.queries == 0 {
            "query accuracy not measured".to_string()
        } else {
            format!(
                "query accuracy {} over {} queries",
                pct(u.query_accuracy),
                u.queries
            )
        };
        s += &format!(
            "{queries}, KL {}, suppression accuracy {:.1}%\n",
            u.kl_divergence
                .map_or("-".to_string(), |v| format!("{v:.4}")),
            u.suppression_accuracy
        );
        let phases: Vec<String> = self
            .timings_ms
            .iter()
            .map(|(k, v)| format!("{k} {:.0} ms", v))
            .collect();
        s += &format!("time: {}", phases.join(", "));
        s
    }

    /// The summary's anatomy lines: the variant and SA side, then each rule's worst group.
    fn anatomy_lines(&self) -> String {
        let mut s = String::new();
        if let Some(a) = &self.anatomy {
            s += &format!(
                "  anatomy {} at l = {}: QI values exact, sensitive values on the SA side ({}), linked to rows only through group and slot\n",
                a.variant,
                a.l,
                a.sa_tables.join(", ")
            );
            for r in &a.rules {
                s += &format!(
                    "  rule {} ({}{}, m = {}, p = {}): worst group {:.3}, {} group(s) at the bound\n",
                    r.rule,
                    r.column,
                    r.value.as_ref().map_or(String::new(), |v| format!(" = {v}")),
                    r.m,
                    r.p,
                    r.worst,
                    r.groups_at_bound
                );
            }
        }
        s
    }

    /// The summary's lines on what is published as the source holds it, left out, or
    /// recoded globally.
    fn shape_lines(&self) -> String {
        let mut s = String::new();
        for t in self
            .tables
            .iter()
            .filter(|t| !t.unchanged_columns.is_empty() && self.anatomy.is_none())
        {
            s += &format!(
                "  {} publishes unchanged: {}\n",
                t.name,
                t.unchanged_columns.join(", ")
            );
        }
        for d in &self.dimensions {
            s += &format!(
                "  dimension {} released as the source holds it: {}{}\n",
                d.name,
                d.columns.join(", "),
                if d.left_out_columns.is_empty() {
                    String::new()
                } else {
                    format!(" (left out: {})", d.left_out_columns.join(", "))
                }
            );
        }
        if !self.left_out.is_empty() {
            s += &format!(
                "  not released (outside the family, not declared dimensions): {}\n",
                self.left_out.join(", ")
            );
        }
        if !self.recoding.is_empty() {
            let levels: Vec<String> = self
                .recoding
                .iter()
                .map(|c| format!("{} {}/{}", c.column, c.level, c.height))
                .collect();
            s += &format!(
                "  every cell generalized to one level per column (level/height): {}\n",
                levels.join(", ")
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_recounted_as_the_release_shows_them() {
        let mut r: Report = serde_json::from_value(sample_json()).expect("a report");
        r.entities_released = 10;
        r.entities = 12;
        r.suppressed_entities = 2;
        // Three clusters, two of them released alike: two classes.
        r.recount_classes(&[6, 4]);
        assert_eq!((r.equivalence_classes, r.smallest_ec), (2, Some(4)));
        assert_eq!(r.ec_size_histogram, BTreeMap::from([(4, 1), (6, 1)]));
        assert_eq!(r.dm, 36 + 16 + 2 * 12);
        // Sizes that do not account for the released entities change nothing.
        r.recount_classes(&[3, 3]);
        assert_eq!(r.equivalence_classes, 2);
    }

    /// A table under four fifths is a warning naming only what would act for this run: a
    /// smaller l always; shape order for ClusTree only with blocking and below the entity.
    #[test]
    fn rows_warnings_offer_what_acts_for_the_run() {
        let mut json = sample_json();
        json["params"]["order"] = serde_json::json!("key");
        json["tables"] = serde_json::json!([
            {"name": "students", "rows_in": 4, "released": 4, "suppressed": 0,
             "orphans_dropped": 0, "qi_columns": 1, "lm": 0.5},
            {"name": "books", "rows_in": 10, "released": 7, "suppressed": 3,
             "orphans_dropped": 0, "qi_columns": 1, "lm": 0.5}
        ]);
        let r: Report = serde_json::from_value(json.clone()).expect("a report");
        let w = r.rows_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("books keeps 7 of its 10 rows (70%)"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("a smaller l than 3"), "{}", w[0]);
        assert!(
            !w[0].contains("order = 'shape'"),
            "ClusTree without blocking: {}",
            w[0]
        );
        json["params"]["candidates"] = serde_json::json!(50);
        let r: Report = serde_json::from_value(json).expect("a report");
        assert!(r.rows_warnings()[0].contains("order = 'shape'"));
        assert!(r.summary().starts_with("warning: books keeps 7"));
    }

    #[test]
    fn histogram_counts_each_size() {
        let h = histogram(&[3, 2, 3, 7, 3]);
        assert_eq!(h, BTreeMap::from([(2, 1), (3, 3), (7, 1)]));
        assert!(histogram(&[]).is_empty());
    }

    #[test]
    fn read_names_the_file_and_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing.json");
        let e = read(&missing).expect_err("no file").to_string();
        assert!(
            e.contains("missing.json") && e.contains("pass the report.json"),
            "{e}"
        );

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"entity": "student"}"#).expect("write");
        let e = read(&bad).expect_err("not a report").to_string();
        assert!(
            e.contains("bad.json") && e.contains("not a relanon report.json"),
            "{e}"
        );
    }

    fn sample_json() -> serde_json::Value {
        serde_json::json!({
            "relanon_version": "0.1.0", "entity": "student",
            "params": {
                "model": {"name": "l-diversity", "l": 3, "diversity": "probabilistic"},
                "algorithm": "clustree", "threshold": 0.3, "climit": 150, "mapping": "grd",
                "m": 4.0, "s": 0.5, "query_seed": 1, "queries": 0,
                "keys": "preserve", "orphans": "drop"
            },
            "tables": [{"name": "students", "rows_in": 4, "released": 3, "suppressed": 1,
                        "orphans_dropped": 0, "qi_columns": 1, "lm": 0.5,
                        "lm_by_column": {"yob": 0.5}}],
            "entities": 4, "entities_released": 3, "suppressed_entities": 1,
            "equivalence_classes": 1, "smallest_ec": 3, "ec_size_histogram": {"3": 1},
            "lm": 0.5, "lm_with_suppression": 0.625, "dm": 13,
            "utility": {"query_accuracy": null, "query_accuracy_by_depth": [], "queries": 0,
                        "kl_divergence": null, "kl_by_column": {}, "suppression_accuracy": 75.0},
            "timings_ms": {"total": 3.5}
        })
    }

    #[test]
    fn a_written_report_reads_back_unchanged() {
        let json = sample_json();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.json");
        std::fs::write(&path, json.to_string()).expect("write");
        let r = read(&path).expect("reads");
        assert_eq!(r.ec_size_histogram, BTreeMap::from([(3, 1)]));
        assert!(serde_json::to_value(&r.params)
            .expect("serializes")
            .get("seed")
            .is_none());
        // Every field written survives (fields added since default).
        let back = serde_json::to_value(&r).expect("serializes");
        for (field, value) in json.as_object().expect("an object") {
            assert_eq!(&back[field], value, "{field}");
        }
    }
}
