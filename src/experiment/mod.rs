//! Reproductions of the papers' experiments: the same declarations run through the whole
//! pipeline (plan, load, cluster, release, utility, self-verify, write) once per parameter
//! setting, with the figures each paper plots collected into a table.

pub mod anatomy;
pub mod classify;
pub mod fragmentation;
pub mod frontier;
pub mod hybrid;
pub mod negotiation;
pub mod pages;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::pipeline::{self, Request};
use crate::progress::Progress;
use crate::report::Report;

/// One algorithm as the thesis names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    /// `ANONYMIZE ... WITH (...)` options selecting it.
    pub options: &'static str,
    /// dMiRaCle is run for every threshold in 0, 0.1, ..., 1 and the best LM reported
    /// (000 Sec. 2.4: "tested with th in [0, 1] with increments of 0.1, and picked the
    /// best-performing result").
    pub sweep_threshold: bool,
}

/// The five algorithms of 000 Fig. 2.3-2.6.
pub const THESIS_VARIANTS: [Variant; 5] = [
    Variant {
        name: "ClusTree-LSAP",
        options: "algorithm = 'clustree', mapping = 'lsap', m = 4, s = 0.5",
        sweep_threshold: false,
    },
    Variant {
        name: "ClusTree-GRD",
        options: "algorithm = 'clustree', mapping = 'grd', m = 4, s = 0.5",
        sweep_threshold: false,
    },
    Variant {
        name: "CToff-LSAP",
        options: "algorithm = 'ctoff', mapping = 'lsap'",
        sweep_threshold: false,
    },
    Variant {
        name: "CToff-GRD",
        options: "algorithm = 'ctoff', mapping = 'grd'",
        sweep_threshold: false,
    },
    Variant {
        name: "dMiRaCle",
        options: "algorithm = 'dmiracle', climit = 150",
        sweep_threshold: true,
    },
];

/// An experiment's rows, and the runs that failed (each said with its error, its cell left
/// out) so one failure does not cost the whole table.
#[derive(Debug, Clone)]
pub struct Table<R> {
    pub rows: Vec<R>,
    pub failed: Vec<String>,
}

/// One cell of the reproduced table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub algorithm: String,
    pub l: usize,
    /// 000 Def. 11 (suppressed vertices count their QIs as fully lost).
    pub lm: f64,
    pub query_accuracy: Option<f64>,
    pub kl_divergence: Option<f64>,
    pub suppression_accuracy: f64,
    pub entities_suppressed: usize,
    /// Clustering alone, and the whole run (load to verified release), in seconds.
    pub cluster_s: f64,
    pub total_s: f64,
    /// dMiRaCle's best threshold.
    pub threshold: Option<f64>,
    /// Seconds over all thresholds tried.
    pub sweep_s: Option<f64>,
}

/// `text` with its `ANONYMIZE entity WITH (...)` statement replaced.
pub fn with_policy(text: &str, entity: &str, options: &str) -> Result<String> {
    let upper = text.to_ascii_uppercase();
    let Some(start) = upper.find("\nANONYMIZE ").map(|i| i + 1) else {
        bail!("the declarations have no ANONYMIZE statement at the start of a line");
    };
    let end = text[start..]
        .find(';')
        .map(|i| start + i + 1)
        .context("the ANONYMIZE statement has no closing ';'")?;
    Ok(format!(
        "{}ANONYMIZE {entity} WITH ({options});{}",
        &text[..start],
        &text[end..]
    ))
}

/// Runs the thesis table: every variant at every l over the declarations in `decl` (whose
/// source must exist), releases written under `work`. `say` hears about each run;
/// `progress` about each run's phases and warnings. A failed run leaves its cell out and is
/// listed in [`Table::failed`].
pub async fn thesis(
    decl: &Path,
    work: &Path,
    ls: &[usize],
    variants: &[Variant],
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<Table<Row>> {
    let base = Request::from_file(decl)?;
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    for &l in ls {
        for v in variants {
            let thresholds: Vec<Option<f64>> = if v.sweep_threshold {
                (0..=10).map(|i| Some(f64::from(i) / 10.0)).collect()
            } else {
                vec![None]
            };
            let mut best: Option<(Report, Option<f64>)> = None;
            let mut sweep = 0.0;
            for th in thresholds {
                let mut options = format!("model = 'l-diversity', l = {l}, {}", v.options);
                if let Some(th) = th {
                    options += &format!(", threshold = {th}");
                }
                let target = work.join(format!(
                    "{}-l{l}.sqlite",
                    v.name.to_ascii_lowercase().replace(' ', "-")
                ));
                let req = Request {
                    text: with_policy(&base.text, "student", &options)?,
                    target: Some(target),
                    overwrite: true,
                    ..base.clone()
                };
                // One failed run (a release verify could not prove, say) must not cost the
                // whole table: it is said and the cell is left out.
                let r = match pipeline::anonymize(&req, progress).await {
                    Ok(outcome) => outcome.report,
                    Err(e) => {
                        failed.push(format!("{} at l = {l}: {e:#}", v.name));
                        continue;
                    }
                };
                let total = r.timings_ms.get("total").copied().unwrap_or(0.0) / 1000.0;
                sweep += total;
                say(&format!(
                    "{} l = {l}{}: LM {:.4}, {:.1} s",
                    v.name,
                    th.map(|t| format!(" th = {t}")).unwrap_or_default(),
                    r.lm_with_suppression,
                    total
                ));
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| r.lm_with_suppression < b.lm_with_suppression)
                {
                    best = Some((r, th));
                }
            }
            let Some((r, th)) = best else {
                continue;
            };
            let secs = |phase: &str| r.timings_ms.get(phase).copied().unwrap_or(0.0) / 1000.0;
            rows.push(Row {
                algorithm: v.name.to_string(),
                l,
                lm: r.lm_with_suppression,
                query_accuracy: r.utility.query_accuracy,
                kl_divergence: r.utility.kl_divergence,
                suppression_accuracy: r.utility.suppression_accuracy,
                entities_suppressed: r.suppressed_entities,
                cluster_s: secs("cluster"),
                total_s: secs("total"),
                threshold: th,
                sweep_s: v.sweep_threshold.then_some(sweep),
            });
        }
    }
    Ok(Table { rows, failed })
}

/// The table as Markdown, one row per (l, algorithm).
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| l | algorithm | LM | query accuracy | KL | suppression accuracy | entities suppressed | cluster (s) | total (s) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
        let th = r
            .threshold
            .map(|t| format!(" (th = {t}, sweep {:.1} s)", r.sweep_s.unwrap_or(0.0)))
            .unwrap_or_default();
        s += &format!(
            "| {} | {}{th} | {:.4} | {} | {} | {:.1}% | {} | {:.2} | {:.2} |\n",
            r.l,
            r.algorithm,
            r.lm,
            pct(r.query_accuracy),
            r.kl_divergence
                .map_or("-".to_string(), |v| format!("{v:.4}")),
            r.suppression_accuracy,
            r.entities_suppressed,
            r.cluster_s,
            r.total_s
        );
    }
    s
}

/// The four algorithms of 001 Sec. V, Fig. 4-8, as `ANONYMIZE ... WITH (...)` options.
pub const MIRACLE_VARIANTS: [(&str, &str); 4] = [
    ("MiRaCle", "algorithm = 'miracle'"),
    ("MiRaCleX", "algorithm = 'miraclex'"),
    ("Bitmap (incomplete)", "algorithm = 'bitmap-incomplete'"),
    ("Bitmap (complete)", "algorithm = 'bitmap-complete'"),
];

/// One cell of the MiRaCle experiment (001 Sec. V).
#[derive(Debug, Clone, serde::Serialize)]
pub struct KRow {
    pub algorithm: String,
    pub k: usize,
    pub threshold: f64,
    /// 001 Def. 8 over the released QI cells (what the paper plots for MiRaCle).
    pub lm: f64,
    /// LM with every suppressed cell counted as fully lost: the comparable figure when an
    /// algorithm (bitmap) loses utility by suppression rather than generalization.
    pub lm_with_suppression: f64,
    /// 001 Def. 9.
    pub dm: u64,
    pub equivalence_classes: usize,
    pub entities_suppressed: usize,
    /// Clustering alone, and the whole run (load to verified release), in seconds.
    pub cluster_s: f64,
    pub total_s: f64,
}

/// 001 Sec. V: every variant at every `(k, threshold)` over the declarations in `decl`
/// with climit = 150 as in the paper, releases written under `work`.
pub async fn miracle(
    decl: &Path,
    work: &Path,
    settings: &[(usize, f64)],
    variants: &[(&str, &str)],
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<Table<KRow>> {
    let base = Request::from_file(decl)?;
    let (mut rows, mut failed) = (Vec::new(), Vec::new());
    for &(k, threshold) in settings {
        for &(name, options) in variants {
            let options = format!("k = {k}, threshold = {threshold}, {options}");
            let slug: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            let req = Request {
                text: with_policy(&base.text, "student", &format!("{options}, climit = 150"))?,
                target: Some(work.join(format!("{slug}-k{k}-th{threshold}.sqlite"))),
                overwrite: true,
                ..base.clone()
            };
            let r = match pipeline::anonymize(&req, progress).await {
                Ok(outcome) => outcome.report,
                Err(e) => {
                    failed.push(format!("{name} at k = {k}, threshold = {threshold}: {e:#}"));
                    continue;
                }
            };
            let secs = |phase: &str| r.timings_ms.get(phase).copied().unwrap_or(0.0) / 1000.0;
            say(&format!(
                "{name} k = {k} th = {threshold}: LM {:.4} (with suppression {:.4}), DM {}, {:.2} s",
                r.lm,
                r.lm_with_suppression,
                r.dm,
                secs("total")
            ));
            rows.push(KRow {
                algorithm: name.to_string(),
                k,
                threshold,
                lm: r.lm,
                lm_with_suppression: r.lm_with_suppression,
                dm: r.dm,
                equivalence_classes: r.equivalence_classes,
                entities_suppressed: r.suppressed_entities,
                cluster_s: secs("cluster"),
                total_s: secs("total"),
            });
        }
    }
    Ok(Table { rows, failed })
}

/// The MiRaCle experiment as Markdown, one row per (k, threshold, algorithm).
pub fn k_markdown(rows: &[KRow]) -> String {
    let mut s = String::from(
        "| k | threshold | algorithm | LM | LM with suppression | DM | ECs | entities suppressed | cluster (s) | total (s) |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {:.4} | {:.4} | {} | {} | {} | {:.2} | {:.2} |\n",
            r.k,
            r.threshold,
            r.algorithm,
            r.lm,
            r.lm_with_suppression,
            r.dm,
            r.equivalence_classes,
            r.entities_suppressed,
            r.cluster_s,
            r.total_s
        );
    }
    s
}

/// Where `thesis` writes its releases for a dataset directory.
/// One release of an experiment's sweep: its report, or None with the failure noted under
/// `setting` (a sweep goes on past a setting the algorithm refuses).
async fn attempt(
    req: &crate::pipeline::Request,
    setting: &str,
    failed: &mut Vec<String>,
    progress: &Progress,
) -> Option<crate::report::Report> {
    match crate::pipeline::anonymize(req, progress).await {
        Ok(outcome) => Some(outcome.report),
        Err(e) => {
            failed.push(format!("{setting}: {e:#}"));
            None
        }
    }
}

pub fn work_dir(out: &Path) -> PathBuf {
    out.join("releases")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_is_replaced_in_place() {
        let text = "SET a = 1;\nANONYMIZE student WITH (k = 3,\n  algorithm = 'x');\nCREATE VIEW v AS SELECT 1;";
        let out = with_policy(text, "student", "l = 2").expect("has a policy");
        assert_eq!(
            out,
            "SET a = 1;\nANONYMIZE student WITH (l = 2);\nCREATE VIEW v AS SELECT 1;"
        );
        assert!(with_policy("SET a = 1;", "student", "l = 2").is_err());
    }
}
