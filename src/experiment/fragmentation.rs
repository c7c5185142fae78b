//! 004 Sec. 6 (`relanon experiment fragmentation`): vertical fragmentation against plain
//! generalization of the whole table, on UCI Adult (8 QIs, the salary class) and on a seeded
//! wide table of 10 to 40 numeric QI columns (the paper's UCI Musk is not available here: spec
//! Sec. 5). Per table: TopDown and the lattice on the whole table, and `algorithm =
//! 'fragment'` over each base with each repair (the lattice on Adult only: the wide tables'
//! lattices are past its search); then distinct l-diversity at l = 2, ClusTree on the whole
//! table against the Sec. 5 pipeline. Every release goes through the whole pipeline and is
//! verified. The measures: query accuracy (relanon's count queries, answered across
//! fragments under the class; docs/fragmentation.md), the paper's classification F-measure
//! (a J48 stand-in and 5-NN trained on the release, tested on held-out source rows:
//! [`super::classify`]), LM, the class cells each repair changed, and the whole run's time.
//! Every table is split 70/30 within each class, seeded: releases are made from the 70%.
//!
//! The wide table's class has three values where the paper's Musk class has two: with two
//! values no join of classes of k rows can re-form fewer than k (docs/fragmentation.md), so a
//! binary class would show every repair at no cost.

use std::path::Path;

use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::Table;
use crate::pipeline::Request;
use crate::progress::Progress;

/// Adult's declarations, its file paths made relative to the data directory.
const ADULT: &str = include_str!("../../sql/adult.sql");

/// What the experiment sweeps.
#[derive(Debug, Clone)]
pub struct Settings {
    pub k: usize,
    /// QI columns of the wide tables.
    pub dims: Vec<usize>,
    /// Rows of each wide table.
    pub rows: usize,
    pub seed: u64,
}

/// The most QI columns a table is given to the lattice with (Adult's 8; a fragment of a wide
/// table has more, and a lattice of 5^10 nodes over 30,000 rows is refused as too large).
const LATTICE_COLUMNS: usize = 8;

/// How one release was made.
const METHODS: [(&str, &str); 9] = [
    ("topdown (whole table)", "algorithm = 'topdown'"),
    ("lattice (whole table)", "algorithm = 'lattice'"),
    (
        "fragment: topdown, dgbe",
        "algorithm = 'fragment', base = 'topdown', repair = 'dgbe'",
    ),
    (
        "fragment: topdown, naive",
        "algorithm = 'fragment', base = 'topdown', repair = 'naive'",
    ),
    (
        "fragment: topdown, delta 0.5",
        "algorithm = 'fragment', base = 'topdown', repair = 'delta', delta = 0.5",
    ),
    (
        "fragment: topdown, dgbe, free sizes",
        "algorithm = 'fragment', base = 'topdown', repair = 'dgbe', sizes = 'free'",
    ),
    (
        "fragment: lattice, dgbe",
        "algorithm = 'fragment', base = 'lattice', repair = 'dgbe'",
    ),
    (
        "clustree (whole table), l = 2",
        "model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'clustree'",
    ),
    (
        "fragment: l = 2 (Sec. 5 pipeline)",
        "model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'fragment'",
    ),
];

/// One release of the experiment.
#[derive(Debug, Clone, Serialize)]
pub struct FragmentRow {
    pub table: String,
    pub qi_columns: usize,
    pub rows: usize,
    pub method: String,
    /// The privacy model: `k = 10` or `l = 2` (distinct l-diversity).
    pub model: String,
    pub query_accuracy: Option<f64>,
    /// Weighted F-measure on the held-out rows: the J48 stand-in and 5-NN.
    pub j48: Option<f64>,
    pub knn: Option<f64>,
    /// Fragmentation only: the accuracy of the queries answered in one fragment and of those
    /// reading both, with their counts.
    pub within_one: Option<(f64, usize)>,
    pub across: Option<(f64, usize)>,
    /// LM over the released QI cells, a suppressed cell counted as fully lost.
    pub lm: f64,
    /// QI columns per fragment ("4 + 4"), empty for a whole-table release.
    pub fragments: String,
    /// Class cells the repair changed, over all fragments.
    pub class_changed: usize,
    /// Fragmentation only: what the re-join attack recovers beyond chance (summed over its
    /// attacks), and the order attack's expected correct links against random ones.
    pub rejoin: Option<(usize, f64, f64)>,
    /// The whole run, load to verified release, in seconds.
    pub total_s: f64,
}

/// One table of the experiment: its declarations (the source its 70%), where they are read
/// from, its class and its held-out 30%.
struct Setup {
    name: String,
    qis: usize,
    text: String,
    base: std::path::PathBuf,
    class: &'static str,
    held: super::classify::Held,
}

/// Adult (its 70% copied under `work`) and a wide table per `dims`.
fn setups(adult: Option<&Path>, work: &Path, s: &Settings) -> Result<Vec<Setup>> {
    let mut out = Vec::new();
    if let Some(data) = adult {
        let dir = work.join("adult-train");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
        let train = dir.join("adult.csv");
        std::fs::copy(data.join("adult.csv"), &train)
            .with_context(|| format!("cannot copy Adult into '{}'", dir.display()))?;
        let held = super::classify::hold_out(&train, ';', "salary-class", s.seed)?;
        let text = ADULT.replace("'../../shared/data/adult/", "'").replace(
            "SET source = 'adult.csv';",
            &format!("SET source = '{}';", train.display()),
        );
        out.push(Setup {
            name: "adult".into(),
            qis: 8,
            text,
            base: data.to_path_buf(),
            class: "salary-class",
            held,
        });
    }
    for &d in &s.dims {
        let dir = work.join(format!("wide-{d}"));
        let text = write_wide(&dir, d, s.rows, s.seed)?;
        let held = super::classify::hold_out(&dir.join("wide.csv"), ',', "label", s.seed)?;
        out.push(Setup {
            name: format!("wide-{d}"),
            qis: d,
            text,
            base: dir,
            class: "label",
            held,
        });
    }
    Ok(out)
}

/// What the classifiers of one table are scored against, and the entity table's name.
async fn ground(t: &Setup) -> Result<(super::classify::Ground, String)> {
    let req = Request {
        text: t.text.clone(),
        base: t.base.clone(),
        origin: format!("the {} declarations", t.name),
        ..Request::default()
    };
    let (plan, _, wh) = crate::pipeline::prepare(&req, &Progress::new()).await?;
    let forest = crate::forest::load(&plan, &wh).await?;
    let entity = &plan.tables[0];
    let columns = entity.qi_columns().map(|(c, _)| c.to_string()).collect();
    let g = super::classify::Ground::new(&forest.tables[0], columns, &t.held, t.class)?;
    Ok((g, entity.name.clone()))
}

/// The tables a release's classifiers are trained on: its fragments, or its entity table.
fn views(
    r: &crate::report::Report,
    entity: &str,
    ground: &[String],
    class: &str,
) -> Vec<super::classify::View> {
    match &r.fragmentation {
        Some(f) => f
            .summary
            .fragments
            .iter()
            .map(|x| super::classify::View {
                table: x.table.clone(),
                qi_columns: x.qi_columns.clone(),
                class: class.to_string(),
                class_sets: x.class_sets.clone(),
            })
            .collect(),
        None => vec![super::classify::View {
            table: entity.to_string(),
            qi_columns: ground.to_vec(),
            class: class.to_string(),
            class_sets: None,
        }],
    }
}

/// Runs every method on Adult (when `adult` holds it) and on a wide table per `dims`,
/// releases written under `work`.
pub async fn fragmentation(
    adult: Option<&Path>,
    work: &Path,
    s: &Settings,
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<Table<FragmentRow>> {
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    for t in setups(adult, work, s)? {
        let (ground, entity) = ground(&t).await?;
        for (method, options) in METHODS {
            // The lattice of more columns is past what its search takes (it refuses it).
            if options.contains("'lattice'") && t.qis > LATTICE_COLUMNS {
                continue;
            }
            let (options, model) = options_of(options, s, t.class);
            let setting = format!("{} {method} {model}", t.name);
            let target = work.join(format!("{}-{}.sqlite", t.name, rows.len() + failed.len()));
            let req = Request {
                text: super::with_policy(&t.text, "person", &options)?,
                base: t.base.clone(),
                origin: format!("the {} declarations ({setting})", t.name),
                target: Some(target.clone()),
                overwrite: true,
                ..Request::default()
            };
            let Some(r) = super::attempt(&req, &setting, &mut failed, progress).await else {
                continue;
            };
            let mut row = row_of(&r, (&t.name, t.qis, t.held.train), method, &model);
            let views = views(&r, &entity, ground.columns(), t.class);
            let scores = super::classify::score(&ground, &target, &views).await?;
            (row.j48, row.knn) = (Some(scores.j48), Some(scores.knn));
            say(&format!(
                "{setting}: query accuracy {}, F-measure J48 {:.3} 5-NN {:.3}, LM {:.4}, {:.1} s",
                row.query_accuracy
                    .map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
                scores.j48,
                scores.knn,
                row.lm,
                row.total_s
            ));
            rows.push(row);
        }
    }
    Ok(Table { rows, failed })
}

/// A method's options with the model (`k` or its own l-diversity) and, for a
/// fragmentation, the class and seed; and the model's name.
fn options_of(options: &str, s: &Settings, class: &str) -> (String, String) {
    // An l-diversity method names its own model (l takes k's place).
    let diverse = options.contains("l-diversity");
    let mut out = if diverse {
        options.to_string()
    } else {
        format!("k = {}, {options}", s.k)
    };
    if options.contains("'fragment'") {
        out += &format!(", class = '{class}', seed = {}", s.seed);
    }
    let model = if diverse {
        "l = 2".to_string()
    } else {
        format!("k = {}", s.k)
    };
    (out, model)
}

/// One release's row: `at` is its table's name, QI columns and rows.
fn row_of(
    r: &crate::report::Report,
    (table, qis, n): (&str, usize, usize),
    method: &str,
    model: &str,
) -> FragmentRow {
    let f = r.fragmentation.as_ref();
    let queries = r.utility.fragment_queries.as_ref();
    FragmentRow {
        table: table.to_string(),
        qi_columns: qis,
        rows: n,
        method: method.to_string(),
        model: model.to_string(),
        query_accuracy: r.utility.query_accuracy,
        j48: None,
        knn: None,
        within_one: queries.and_then(|q| q.within_one.map(|a| (a, q.within_one_count))),
        across: queries.and_then(|q| q.across.map(|a| (a, q.across_count))),
        lm: r.lm_with_suppression,
        fragments: f.map_or(String::new(), |f| {
            f.summary
                .fragments
                .iter()
                .map(|x| x.qi_columns.len().to_string())
                .collect::<Vec<_>>()
                .join(" + ")
        }),
        class_changed: f.map_or(0, |f| {
            f.summary.fragments.iter().map(|x| x.class_changed).sum()
        }),
        rejoin: f.and_then(|f| f.rejoin.as_ref()).map(|j| {
            (
                j.beyond_chance,
                j.by_order.expected_correct,
                j.by_order.chance,
            )
        }),
        total_s: r.timings_ms.get("total").copied().unwrap_or(0.0) / 1000.0,
    }
}

/// A wide table in `dir` (`wide.csv` and nothing else), and its declarations: `dims` numeric
/// QI columns of values 0 to 99 driven by four hidden factors (column `j` loads on factor
/// `j mod 4` with a weight of its own, the rest noise), and a three-valued class from the
/// first two factors. Seeded: the same seed writes the same file.
pub fn write_wide(dir: &Path, dims: usize, rows: usize, seed: u64) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (dims as u64) << 32);
    let weights: Vec<f64> = (0..dims).map(|_| rng.random_range(0.5..0.95)).collect();
    let names: Vec<String> = (1..=dims).map(|j| format!("q{j:02}")).collect();
    let mut csv = names.join(",") + ",label\n";
    for _ in 0..rows {
        let factors: [f64; 4] = std::array::from_fn(|_| rng.random::<f64>());
        for (j, w) in weights.iter().enumerate() {
            let v = w * factors[j % 4] + (1.0 - w) * rng.random::<f64>();
            csv += &format!("{},", ((v * 100.0) as u32).min(99));
        }
        let score = 0.7 * factors[0] + 0.3 * factors[1] + 0.1 * rng.random::<f64>();
        let label = if score < 0.4 {
            "low"
        } else if score < 0.65 {
            "mid"
        } else {
            "high"
        };
        csv += label;
        csv.push('\n');
    }
    let path = dir.join("wide.csv");
    std::fs::write(&path, csv).with_context(|| format!("cannot write '{}'", path.display()))?;
    let mut text = String::from(
        "SET source = 'wide.csv';\nCREATE HIERARCHY band_h AS BANDS (5, 10, 20, 40);\nCREATE ENTITY person ON wide;\n",
    );
    for n in &names {
        text += &format!("LABEL COLUMN wide.{n} AS QUASI IDENTIFIER USING band_h;\n");
    }
    text += "LABEL COLUMN wide.label AS SENSITIVE;\nANONYMIZE person WITH (k = 10);\n";
    Ok(text)
}

fn f3(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.3}"))
}

/// The tables as Markdown, with fragmentation's query accuracy over the better of the
/// whole-table releases of the same table under the same model.
pub fn markdown(rows: &[FragmentRow]) -> String {
    let mut s = String::from(
        "| table | QI columns | rows | model | method | fragments | query accuracy | in one fragment | across both | vs best whole | F-measure J48* | F-measure 5-NN | LM | class cells changed | re-join: beyond chance (by order vs random) | total (s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let best_whole = rows
            .iter()
            .filter(|w| w.table == r.table && w.model == r.model && w.fragments.is_empty())
            .filter_map(|w| w.query_accuracy)
            .fold(None::<f64>, |m, a| Some(m.map_or(a, |m| m.max(a))));
        let ratio = match (r.query_accuracy, best_whole, r.fragments.is_empty()) {
            (Some(a), Some(b), false) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".to_string(),
        };
        let part = |p: Option<(f64, usize)>| {
            p.map_or("-".to_string(), |(a, n)| format!("{:.1}% ({n})", 100.0 * a))
        };
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {ratio} | {} | {} | {:.4} | {} | {} | {:.2} |\n",
            r.table,
            r.qi_columns,
            r.rows,
            r.model,
            r.method,
            if r.fragments.is_empty() {
                "-"
            } else {
                &r.fragments
            },
            r.query_accuracy
                .map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
            part(r.within_one),
            part(r.across),
            f3(r.j48),
            f3(r.knn),
            r.lm,
            r.class_changed,
            r.rejoin
                .map_or("-".to_string(), |(n, order, random)| format!(
                    "{n} ({order:.2} vs {random:.2})"
                )),
            r.total_s
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_table_is_seeded_and_declared_column_by_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = write_wide(dir.path(), 12, 50, 3).expect("write");
        let first = std::fs::read_to_string(dir.path().join("wide.csv")).expect("read");
        write_wide(dir.path(), 12, 50, 3).expect("write again");
        let again = std::fs::read_to_string(dir.path().join("wide.csv")).expect("read");
        assert_eq!(first, again);
        assert_eq!(first.lines().count(), 51);
        assert!(first.starts_with("q01,q02,"), "{first}");
        assert_eq!(text.matches("AS QUASI IDENTIFIER").count(), 12);
        assert!(text.contains("LABEL COLUMN wide.label AS SENSITIVE;"));
        let labels: std::collections::BTreeSet<&str> = first
            .lines()
            .skip(1)
            .filter_map(|l| l.rsplit(',').next())
            .collect();
        assert_eq!(labels.len(), 3, "{labels:?}");
    }
}
