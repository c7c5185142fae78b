//! The answers `negotiate` prints (and `--json` serializes): a request as the command line
//! gives it ([`Ask`]) checked against a lattice and answered over it ([`answer`]), as data
//! ([`Answered`] and the `*Json` types). The search itself is
//! [`crate::algo::negotiate`]'s; the lattice is [`crate::lattice_file::Built`].

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use crate::algo::kernel::annotate::Measure;
use crate::algo::negotiate::{negotiate, negotiate_partial, Answer, Relaxed, Request as Query};
use crate::lattice_file::{Built, Meta};

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
    let (measure, value) = measure_of(built, ask)?;
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
    let render = |answer: &Answer, deviation: String| render(meta, n, measure, answer, deviation);
    Ok(Answered {
        request: AskedJson {
            measure: name_of(measure).to_string(),
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
        lattice: lattice_json(built, got.v_max_computed),
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
                    .map(|x| render(x, deviation(meta, &query, r.relaxes, x))),
                reason: r.answer.as_ref().err().cloned(),
            })
            .collect(),
        stats: StatsJson {
            visited: got.visited,
            microseconds: micros,
        },
    })
}

/// `k` or `l`.
fn name_of(measure: Measure) -> &'static str {
    if measure == Measure::Size {
        "k"
    } else {
        "l"
    }
}

/// The measure and value asked for (the declarations' when the request names neither),
/// refused when the lattice cannot answer it or it protects nobody.
fn measure_of(built: &Built, ask: &Ask) -> Result<(Measure, u32)> {
    let meta = &built.meta;
    let n = built.lattice.entities;
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
    let name = name_of(measure);
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
    Ok((measure, value))
}

/// What the answers were searched over.
fn lattice_json(built: &Built, v_max_computed: bool) -> LatticeJson {
    let (meta, a) = (&built.meta, &built.lattice);
    LatticeJson {
        nodes: a.nodes(),
        computed: a
            .computed
            .as_ref()
            .map_or(a.nodes(), |c| c.iter().filter(|&&x| x).count()),
        partial: meta.partial,
        v_max_computed,
        columns: meta.columns.iter().map(|c| c.name.clone()).collect(),
        heights: a.heights.clone(),
        build_seconds: meta.build_seconds,
    }
}

/// One answer as printed: its levels by column, LM, suppression, and the `--with` options
/// that release it.
fn render(meta: &Meta, n: u64, measure: Measure, answer: &Answer, deviation: String) -> AnswerJson {
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
        measure: name_of(measure).to_string(),
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
}

/// How a relaxation's answer departs from the request.
fn deviation(meta: &Meta, query: &Query, relaxes: Relaxed, answer: &Answer) -> String {
    match relaxes {
        Relaxed::Suppression => format!(
            "+{} entities over {}",
            answer.suppressed[0].saturating_sub(query.budget),
            query.budget
        ),
        Relaxed::Value => format!(
            "{} {} -> {}",
            name_of(query.measure),
            query.value,
            answer.value
        ),
        Relaxed::Levels => {
            let above: Vec<String> = meta
                .columns
                .iter()
                .zip(answer.levels.iter().zip(&query.max_levels))
                .filter(|(_, (l, m))| l > m)
                .map(|(c, (l, m))| format!("{} {m} -> {l}", c.name))
                .collect();
            format!("above the max: {}", above.join(", "))
        }
    }
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
