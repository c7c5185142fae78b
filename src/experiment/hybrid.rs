//! 003 Sec. 5 on UCI Adult (`relanon experiment hybrid`): LM and query error of the lattice
//! (Incognito: full-domain, no relocation) and the four hybrid variants (S-Hybrid,
//! randomized, statistical, rstat) against k at a fixed p, against p at a fixed k, and at
//! one k and p with a suppression budget. Every release goes through the whole pipeline and
//! is verified, so a variant that breaks its budget fails its cell.
//!
//! The paper's Adult has the salary class and 8 QIs; here they are ARX's hierarchies over the
//! 30,162 rows without missing values (the declarations of `sql/adult.sql`), the salary class
//! SENSITIVE.

use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use super::Table;
use crate::pipeline::Request;
use crate::progress::Progress;

/// Adult's declarations, its file paths made relative to the data directory.
const ADULT: &str = include_str!("../../sql/adult.sql");

/// The algorithms of 003 Sec. 5, named as the paper does, and hybrid's `relocation` for
/// each (None: the lattice; the deterministic variant is hybrid's default and not written).
pub const VARIANTS: [(&str, Option<&str>); 5] = [
    ("Incognito", None),
    ("S-Hybrid", Some("deterministic")),
    ("S-Hybrid-rand", Some("randomized")),
    ("S-Hybrid-stat", Some("statistical")),
    ("S-Hybrid-rstat", Some("rstat")),
];

/// What the sweep varies and where it holds the rest.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The k of the first sweep (003 Fig. 2: against k).
    pub ks: Vec<usize>,
    /// The p of the second sweep (003 Fig. 3: against p), in percent.
    pub ps: Vec<f64>,
    /// k where p varies, and p where k varies.
    pub k: usize,
    pub p: f64,
    /// The statistical variants' level.
    pub alpha: f64,
    /// The third setting's suppression budget (a share of the entities).
    pub suppression: f64,
    /// The randomized variants' seed.
    pub seed: u64,
}

/// One release of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct HybridRow {
    /// "k", "p" or "suppression": which sweep it belongs to.
    pub sweep: String,
    pub algorithm: String,
    pub k: usize,
    /// The budget in percent of QI cells (none for the lattice).
    pub p: Option<f64>,
    pub max_suppression: f64,
    /// LM over the source's QI cells, a suppressed cell counted as fully lost.
    pub lm: f64,
    /// Mean relative error of the count queries (1 - relanon's query accuracy).
    pub query_error: Option<f64>,
    pub relocated_cells: usize,
    pub relocated_share: f64,
    pub suppressed_entities: usize,
    /// The lattice node, one level per QI column in the declarations' order.
    pub node: String,
    /// The whole run, load to verified release, in seconds.
    pub total_s: f64,
}

/// Adult's declarations with their files in `data` and the given `ANONYMIZE` options.
fn declarations(options: &str) -> Result<String> {
    let text = ADULT.replace("'../../shared/data/adult/", "'");
    super::with_policy(&text, "person", options)
}

/// The options of one variant (its `relocation`, None for the lattice) at one setting.
fn options(relocation: Option<&str>, k: usize, p: f64, suppression: f64, s: &Settings) -> String {
    let Some(relocation) = relocation else {
        return format!("k = {k}, algorithm = 'lattice', max_suppression = {suppression}");
    };
    let mut o = format!("k = {k}, algorithm = 'hybrid'");
    if relocation != "deterministic" {
        o += &format!(", relocation = '{relocation}'");
    }
    o += &format!(", max_suppression = {suppression}, p = {p}");
    if matches!(relocation, "statistical" | "rstat") {
        o += &format!(", alpha = {}", s.alpha);
    }
    if matches!(relocation, "randomized" | "rstat") {
        o += &format!(", seed = {}", s.seed);
    }
    o
}

/// Runs the three settings over Adult in `data`, releases written under `work`.
pub async fn hybrid(
    data: &Path,
    work: &Path,
    s: &Settings,
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<Table<HybridRow>> {
    if !data.join("adult.csv").is_file() {
        bail!(
            "'{}' has no adult.csv: give --data the directory holding UCI Adult as ARX distributes it (adult.csv and adult_hierarchy_*.csv)",
            data.display()
        );
    }
    let mut settings: Vec<(&str, usize, f64, f64)> = Vec::new();
    settings.extend(s.ks.iter().map(|&k| ("k", k, s.p, 0.0)));
    settings.extend(s.ps.iter().map(|&p| ("p", s.k, p, 0.0)));
    settings.push(("suppression", s.k, s.p, s.suppression));
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    for (sweep, k, p, suppression) in settings {
        for (name, relocation) in VARIANTS {
            let hybrid = relocation.is_some();
            // The lattice does not depend on p: once per k and suppression.
            if !hybrid && sweep == "p" && p != s.ps[0] {
                continue;
            }
            let setting = format!("{name} k = {k} p = {p} max_suppression = {suppression}");
            let target = work.join(format!(
                "{}-k{k}-p{p}-s{suppression}.sqlite",
                name.to_ascii_lowercase()
            ));
            let req = Request {
                text: declarations(&options(relocation, k, p, suppression, s))?,
                base: data.to_path_buf(),
                origin: format!("the Adult declarations ({setting})"),
                target: Some(target),
                overwrite: true,
                ..Request::default()
            };
            let Some(r) = super::attempt(&req, &setting, &mut failed, progress).await else {
                continue;
            };
            let total_s = r.timings_ms.get("total").copied().unwrap_or(0.0) / 1000.0;
            let relocation = r.relocation.as_ref();
            let row = HybridRow {
                sweep: sweep.to_string(),
                algorithm: name.to_string(),
                k,
                p: hybrid.then_some(p),
                max_suppression: suppression,
                lm: r.lm_with_suppression,
                query_error: r.utility.query_accuracy.map(|a| 1.0 - a),
                relocated_cells: relocation.map_or(0, |x| x.relocated_cells),
                relocated_share: relocation.map_or(0.0, |x| x.relocated_share),
                suppressed_entities: r.suppressed_entities,
                node: r.recoding.iter().map(|c| c.level.to_string()).collect(),
                total_s,
            };
            say(&format!(
                "{setting}: LM {:.4}, relocated {} ({:.2}%), {:.1} s",
                row.lm,
                row.relocated_cells,
                100.0 * row.relocated_share,
                total_s
            ));
            rows.push(row);
        }
    }
    Ok(Table { rows, failed })
}

/// The three settings as Markdown tables.
pub fn markdown(rows: &[HybridRow]) -> String {
    let mut s = String::new();
    for (sweep, title) in [
        ("k", "Against k"),
        ("p", "Against p"),
        ("suppression", "With a suppression budget"),
    ] {
        s += &format!(
            "### {title}\n\n| k | p | max_suppression | algorithm | node | LM | query error | relocated cells | suppressed | total (s) |\n|---|---|---|---|---|---|---|---|---|---|\n"
        );
        for r in rows.iter().filter(|r| r.sweep == sweep) {
            s += &format!(
                "| {} | {} | {} | {} | {} | {:.4} | {} | {} ({:.2}%) | {} | {:.2} |\n",
                r.k,
                r.p.map_or("-".to_string(), |p| p.to_string()),
                r.max_suppression,
                r.algorithm,
                r.node,
                r.lm,
                r.query_error
                    .map_or("-".to_string(), |e| format!("{:.1}%", 100.0 * e)),
                r.relocated_cells,
                100.0 * r.relocated_share,
                r.suppressed_entities,
                r.total_s
            );
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            ks: vec![10],
            ps: vec![1.0],
            k: 10,
            p: 1.0,
            alpha: 0.05,
            suppression: 0.05,
            seed: 7,
        }
    }

    #[test]
    fn each_variant_is_given_only_the_options_it_takes() {
        let s = settings();
        let o = |v: usize| options(VARIANTS[v].1, 10, 1.0, 0.0, &s);
        assert_eq!(o(0), "k = 10, algorithm = 'lattice', max_suppression = 0");
        assert_eq!(
            o(1),
            "k = 10, algorithm = 'hybrid', max_suppression = 0, p = 1"
        );
        assert!(o(2).ends_with(", p = 1, seed = 7"), "{}", o(2));
        assert!(o(3).ends_with(", p = 1, alpha = 0.05"), "{}", o(3));
        assert!(o(4).ends_with(", alpha = 0.05, seed = 7"), "{}", o(4));
    }

    #[test]
    fn the_declarations_read_the_files_of_the_data_directory() {
        let text = declarations("k = 5, algorithm = 'hybrid'").expect("an ANONYMIZE statement");
        assert!(text.contains("SET source = 'adult.csv';"), "{text}");
        assert!(
            text.contains("FROM CSV 'adult_hierarchy_age.csv'"),
            "{text}"
        );
        assert!(text.contains("ANONYMIZE person WITH (k = 5, algorithm = 'hybrid');"));
        assert!(!text.contains("shared/data"), "{text}");
    }
}
