//! `relanon experiment frontier`: what the suppression price buys. Whole-record
//! k-anonymity suppresses the child rows a class's trees cannot match, so each clustering
//! algorithm trades rows kept against QI loss; `suppression_price` moves it along that
//! trade and `order = 'shape'` changes which trees meet. The experiment sweeps the price for
//! MiRaCle, MiRaCleX, ClusTree and CToff in both orders over one warehouse at one k, and
//! runs the shape-only grouping once as the reference: what grouping by tree shape alone
//! keeps, whatever the QIs cost. Every run goes through the whole
//! pipeline, so every row belongs to a verified release.

use std::path::Path;

use anyhow::{Context, Result};

use super::{with_policy, Table};
use crate::pipeline::{self, Request};
use crate::policy::Policy;
use crate::progress::Progress;
use crate::report::Report;

/// The prices swept when none are given: from a suppressed row costing a quarter of a fully
/// generalized one to costing 32 of them.
pub const DEFAULT_PRICES: [f64; 8] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

/// The clustering algorithms swept, as the papers name them and as `algorithm = '...'`
/// selects them.
pub const ALGORITHMS: [(&str, &str); 4] = [
    ("MiRaCle", "miracle"),
    ("MiRaCleX", "miraclex"),
    ("ClusTree", "clustree"),
    ("CToff", "ctoff"),
];

/// The `order = '...'` values every algorithm runs with.
pub const ORDERS: [&str; 2] = ["key", "shape"];

/// The reference's `algorithm = '...'` value.
pub const REFERENCE: &str = "shape-only";

/// The reference's line name, in tables and legends.
pub const REFERENCE_LINE: &str = "shape-only (reference)";

/// One line of the frontier: an algorithm in one order, run at every price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// `MiRaCleX (shape)`.
    pub name: String,
    /// The paper's name (`MiRaCleX`).
    pub label: &'static str,
    /// `algorithm = '...'`.
    pub algorithm: &'static str,
    /// `order = '...'`.
    pub order: &'static str,
}

/// Every (algorithm, order) line, algorithms in [`ALGORITHMS`] order, `key` before `shape`.
pub fn lines() -> Vec<Line> {
    ALGORITHMS
        .iter()
        .flat_map(|&(label, algorithm)| {
            ORDERS.iter().map(move |&order| Line {
                name: format!("{label} ({order})"),
                label,
                algorithm,
                order,
            })
        })
        .collect()
}

/// The lines `only` selects: a line by its name (`MiRaCleX (shape)`) or an algorithm's lines
/// by its name (`MiRaCleX`), case-insensitively; every line when `only` is empty.
pub fn select(only: &[String]) -> Vec<Line> {
    lines()
        .into_iter()
        .filter(|l| {
            only.is_empty()
                || only.iter().any(|o| {
                    let o = o.trim();
                    o.eq_ignore_ascii_case(&l.name) || o.eq_ignore_ascii_case(l.label)
                })
        })
        .collect()
}

/// What a run kept of one family table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Kept {
    pub table: String,
    pub rows_in: usize,
    pub released: usize,
}

impl Kept {
    /// The share of the table's rows released; an empty table lost nothing.
    pub fn share(&self) -> f64 {
        if self.rows_in == 0 {
            1.0
        } else {
            self.released as f64 / self.rows_in as f64
        }
    }
}

/// One run: a line at one price, or the reference (no price).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FrontierRow {
    /// `MiRaCleX (shape)`, or [`REFERENCE_LINE`].
    pub line: String,
    /// `algorithm = '...'`.
    pub algorithm: String,
    /// `order = '...'`; none for the reference, which has its own order.
    pub order: Option<String>,
    /// `suppression_price`; none for the reference, which takes no price.
    pub price: Option<f64>,
    pub k: usize,
    /// Every family table, the entity table first, as the report lists them.
    pub tables: Vec<Kept>,
    /// The least share kept over the family tables: what the row's worst table lost.
    pub least_kept: f64,
    /// 001 Def. 8 over the released QI cells.
    pub lm: f64,
    /// 000 Def. 11: suppressed cells count as fully lost.
    pub lm_with_suppression: f64,
    pub query_accuracy: Option<f64>,
    pub verified: bool,
    /// The whole run, load to verified release.
    pub total_s: f64,
}

impl FrontierRow {
    /// The row of `line` at `price` (none: the reference) from its run's report.
    pub fn from_report(
        line: &str,
        algorithm: &str,
        order: Option<&str>,
        price: Option<f64>,
        k: usize,
        r: &Report,
    ) -> FrontierRow {
        let tables: Vec<Kept> = r
            .tables
            .iter()
            .map(|t| Kept {
                table: t.name.clone(),
                rows_in: t.rows_in,
                released: t.released,
            })
            .collect();
        let least_kept = tables.iter().map(Kept::share).fold(1.0, f64::min);
        FrontierRow {
            line: line.to_string(),
            algorithm: algorithm.to_string(),
            order: order.map(str::to_string),
            price,
            k,
            tables,
            least_kept,
            lm: r.lm,
            lm_with_suppression: r.lm_with_suppression,
            query_accuracy: r.utility.query_accuracy,
            verified: r.verified,
            total_s: r.timings_ms.get("total").copied().unwrap_or(0.0) / 1000.0,
        }
    }

    /// Whether this is the shape-only reference.
    pub fn is_reference(&self) -> bool {
        self.price.is_none()
    }

    /// What this run kept of `table`, if the table is in its release's family.
    pub fn kept(&self, table: &str) -> Option<&Kept> {
        self.tables.iter().find(|t| t.table == table)
    }
}

/// The family tables of `rows`, in the order the reports list them (entity table first).
pub fn table_names(rows: &[FrontierRow]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for t in rows.iter().flat_map(|r| &r.tables) {
        if !names.contains(&t.table) {
            names.push(t.table.clone());
        }
    }
    names
}

/// `117/120 (97.5%)`.
pub fn kept_cell(k: &Kept) -> String {
    format!("{}/{} ({:.1}%)", k.released, k.rows_in, 100.0 * k.share())
}

/// The entity `ANONYMIZE` must name: the declared entity's, else the one the `ANONYMIZE`
/// statement already names.
fn entity(policy: &Policy, origin: &str) -> Result<String> {
    policy
        .entity
        .as_ref()
        .map(|e| e.name.clone())
        .or(policy.anonymize.as_ref().map(|a| a.entity.clone()))
        .with_context(|| {
            format!(
                "'{origin}' declares no entity: add `CREATE ENTITY name ON table (key);` and an \
                 `ANONYMIZE name WITH (...);` for the frontier to sweep"
            )
        })
}

/// `text` without the `KEEP` statements `policy` read from it (each from where the parser
/// says it starts to its `;`).
fn without_keeps(text: &str, policy: &Policy) -> Result<String> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for k in &policy.keeps {
        let line_start: usize = text
            .split_inclusive('\n')
            .take(k.pos.line.saturating_sub(1) as usize)
            .map(str::len)
            .sum();
        let start = line_start
            + text[line_start..]
                .chars()
                .take(k.pos.column.saturating_sub(1) as usize)
                .map(char::len_utf8)
                .sum::<usize>();
        let end = text[start..]
            .find(';')
            .map(|i| start + i + 1)
            .context("a KEEP statement has no closing ';'")?;
        cuts.push((start, end));
    }
    let mut out = text.to_string();
    for &(start, end) in cuts.iter().rev() {
        out.replace_range(start..end, "");
    }
    Ok(out)
}

/// Runs every line of `lines` at every price of `prices` at k = `k`, then the shape-only
/// reference, over the declarations in `decl` (their `ANONYMIZE` options replaced, the rest
/// as written), releases written under `work` (one file per run, overwritten). `say` hears
/// about each run; `progress` about each run's phases. A failed run leaves its row out and is
/// listed in [`Table::failed`].
pub async fn frontier(
    decl: &Path,
    work: &Path,
    k: usize,
    prices: &[f64],
    lines: &[Line],
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<Table<FrontierRow>> {
    let base = Request::from_file(decl)?;
    let policy = crate::decl::parse(&base.text)
        .with_context(|| format!("cannot read the declarations '{}'", base.origin))?;
    // Quoted: an entity named with a space or a keyword must survive being written back.
    let entity = format!(
        "\"{}\"",
        entity(&policy, &base.origin)?.replace('"', "\"\"")
    );
    // A KEEP floor would move each run's price off the one swept: the frontier is there to
    // show what every price keeps, floors aside.
    let text = without_keeps(&base.text, &policy)?;
    let floors = policy.keeps.len();
    if floors > 0 {
        say(&format!(
            "{floors} KEEP floor(s) set aside: the frontier sweeps the price itself"
        ));
    }
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    // Each line's runs, then the reference's: (line, algorithm, order, price).
    let mut runs: Vec<(String, &str, Option<&str>, Option<f64>)> = Vec::new();
    for l in lines {
        for &p in prices {
            runs.push((l.name.clone(), l.algorithm, Some(l.order), Some(p)));
        }
    }
    runs.push((REFERENCE_LINE.to_string(), REFERENCE, None, None));
    for (line, algorithm, order, price) in runs {
        let mut options = format!("model = 'k-anonymity', k = {k}, algorithm = '{algorithm}'");
        if let Some(o) = order {
            options += &format!(", order = '{o}'");
        }
        if let Some(p) = price {
            options += &format!(", suppression_price = {p}");
        }
        let file = match (order, price) {
            (Some(o), Some(p)) => format!("frontier-{algorithm}-{o}-k{k}-p{p}.sqlite"),
            _ => format!("frontier-{algorithm}-k{k}.sqlite"),
        };
        let at = price.map_or(String::new(), |p| format!(" at price {p}"));
        let req = Request {
            text: with_policy(&text, &entity, &options)?,
            target: Some(work.join(file)),
            overwrite: true,
            ..base.clone()
        };
        // One failed run must not cost the whole frontier: it is said and its row left out.
        let r = match pipeline::anonymize(&req, progress).await {
            Ok(outcome) => outcome.report,
            Err(e) => {
                failed.push(format!("{line}{at}: {e:#}"));
                continue;
            }
        };
        let row = FrontierRow::from_report(&line, algorithm, order, price, k, &r);
        say(&format!(
            "{line}{at}: least kept {:.1}%, LM {:.4}, {:.2} s",
            100.0 * row.least_kept,
            row.lm,
            row.total_s
        ));
        rows.push(row);
    }
    Ok(Table { rows, failed })
}

/// The frontier as Markdown, one row per run: what it kept of every family table, its QI
/// loss and its query accuracy.
pub fn markdown(rows: &[FrontierRow]) -> String {
    let tables = table_names(rows);
    let mut s = String::from("| line | price |");
    for t in &tables {
        s += &format!(" {t} kept |");
    }
    s += " LM | LM with suppression | query accuracy | total (s) |\n|---|---|";
    s += &"---|".repeat(tables.len() + 4);
    s += "\n";
    for r in rows {
        s += &format!(
            "| {} | {} |",
            r.line,
            r.price.map_or("-".to_string(), |p| p.to_string())
        );
        for t in &tables {
            s += &format!(" {} |", r.kept(t).map_or("-".to_string(), kept_cell));
        }
        s += &format!(
            " {:.4} | {:.4} | {} | {:.2} |\n",
            r.lm,
            r.lm_with_suppression,
            r.query_accuracy
                .map_or("-".to_string(), |a| format!("{:.1}%", 100.0 * a)),
            r.total_s
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_floors_are_set_aside_and_the_rest_stays_as_written() {
        let text = "CREATE ENTITY c ON \"Cüst\" (id);\nKEEP 90 PERCENT OF \"Cüst\"; -- floor\n  keep 50\n percent of o;\nANONYMIZE c WITH (k = 5);\n";
        let policy = crate::decl::parse(text).expect("parses");
        assert_eq!(policy.keeps.len(), 2);
        let out = without_keeps(text, &policy).expect("each KEEP ends");
        assert_eq!(
            out,
            "CREATE ENTITY c ON \"Cüst\" (id);\n -- floor\n  \nANONYMIZE c WITH (k = 5);\n"
        );
        assert!(crate::decl::parse(&out)
            .expect("still parses")
            .keeps
            .is_empty());
    }

    /// A report as report.json carries it: `tables` as (name, rows in, released).
    fn report(tables: &[(&str, usize, usize)], lm: f64) -> Report {
        let tables: Vec<serde_json::Value> = tables
            .iter()
            .map(|&(name, rows_in, released)| {
                serde_json::json!({
                    "name": name, "rows_in": rows_in, "released": released,
                    "suppressed": rows_in - released, "orphans_dropped": 0,
                    "qi_columns": 1, "lm": lm
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "relanon_version": "0.1.0",
            "entity": "customer",
            "params": {
                "model": {"name": "k-anonymity", "k": 5}, "algorithm": "miraclex",
                "query_seed": 1, "queries": 200, "keys": "pseudonymize", "orphans": "refuse"
            },
            "tables": tables,
            "entities": 120, "entities_released": 117, "suppressed_entities": 3,
            "equivalence_classes": 23, "smallest_ec": 5,
            "lm": lm, "lm_with_suppression": lm + 0.05, "dm": 600,
            "verified": true,
            "utility": {
                "query_accuracy": 0.8, "query_accuracy_by_depth": [], "queries": 200,
                "kl_divergence": null, "kl_by_column": {},
                "suppression_accuracy": 95.0
            },
            "timings_ms": {"total": 1500.0}
        }))
        .expect("the sample is a report")
    }

    #[test]
    fn eight_lines_named_by_algorithm_and_order() {
        let all = lines();
        assert_eq!(all.len(), 8);
        assert_eq!(all[0].name, "MiRaCle (key)");
        assert_eq!(all[3].name, "MiRaCleX (shape)");
        assert_eq!((all[3].algorithm, all[3].order), ("miraclex", "shape"));
        let mut names: Vec<&str> = all.iter().map(|l| l.name.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), 8);
        // An algorithm's name selects both its orders; a line's name that line alone.
        let picked = select(&["miraclex".to_string(), "CToff (key)".to_string()]);
        let picked: Vec<&str> = picked.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            picked,
            ["MiRaCleX (key)", "MiRaCleX (shape)", "CToff (key)"]
        );
        assert_eq!(select(&[]).len(), 8);
        assert!(select(&["nope".to_string()]).is_empty());
    }

    #[test]
    fn a_row_keeps_every_table_and_its_least_share() {
        let r = report(
            &[
                ("customer", 120, 117),
                ("rental", 360, 353),
                ("empty", 0, 0),
            ],
            0.6,
        );
        let row = FrontierRow::from_report(
            "MiRaCleX (shape)",
            "miraclex",
            Some("shape"),
            Some(4.0),
            5,
            &r,
        );
        assert_eq!(row.tables.len(), 3);
        assert!((row.least_kept - 117.0 / 120.0).abs() < 1e-12, "{row:?}");
        assert!((row.total_s - 1.5).abs() < 1e-12);
        assert!(row.verified && !row.is_reference());
        assert_eq!(row.kept("empty").map(Kept::share), Some(1.0));
        assert_eq!(kept_cell(&row.tables[1]), "353/360 (98.1%)");
    }

    #[test]
    fn markdown_has_a_kept_column_per_family_table_and_the_reference_without_price() {
        let tables = [("customer", 120, 120), ("rental", 360, 262)];
        let rows = vec![
            FrontierRow::from_report(
                "MiRaCle (key)",
                "miracle",
                Some("key"),
                Some(0.25),
                5,
                &report(&tables, 0.4617),
            ),
            FrontierRow::from_report(
                REFERENCE_LINE,
                REFERENCE,
                None,
                None,
                5,
                &report(&tables, 0.8291),
            ),
        ];
        let md = markdown(&rows);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[0],
            "| line | price | customer kept | rental kept | LM | LM with suppression | query accuracy | total (s) |"
        );
        assert_eq!(lines[1].matches("---").count(), 8);
        assert_eq!(
            lines[2],
            "| MiRaCle (key) | 0.25 | 120/120 (100.0%) | 262/360 (72.8%) | 0.4617 | 0.5117 | 80.0% | 1.50 |"
        );
        assert!(
            lines[3].starts_with("| shape-only (reference) | - | 120/120 (100.0%) |"),
            "{md}"
        );
        assert_eq!(table_names(&rows), ["customer", "rental"]);
    }
}
