//! Check 3, "truthfulness": every released row stands for its own source row of the same
//! table, under the source row's parent, with QI cells that are the value or an ancestor of
//! it and SA / insensitive cells that are the value.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::data::{show_cell, show_key, Content, Rule, TableData};
use super::hier::{Hier, ROOT};
use super::matching::max_matching;
use super::{Check, Keys, VerifyError};
use crate::keymap::{KeyMap, KeyValue};
use crate::plan::{FamilyTable, Plan};

/// Traces every released row to its source row (filling `rel_to_src`, parents first, since
/// a key-less table is matched under its traced parents) and checks each traced pair.
pub(super) fn check(
    plan: &Plan,
    tables: &mut [TableData],
    keys: &Keys<'_>,
    hiers: &HashMap<String, Hier>,
    out: &mut Check,
) -> Result<(), VerifyError> {
    for ti in 0..tables.len() {
        let keyed = !tables[ti].rel_pk.is_empty();
        let mapped = if keyed {
            let ft = plan
                .tables
                .get(ti)
                .ok_or_else(|| VerifyError::Plan(format!("no plan entry for table #{ti}")))?;
            by_key(ft, tables, ti, keys, out)?
        } else {
            by_content(tables, ti, hiers, out)
        };
        tables[ti].rel_to_src = mapped;
        if keyed {
            check_pairs(tables, ti, hiers, out);
        }
    }
    Ok(())
}

fn render_key_value(v: &KeyValue) -> String {
    match v {
        KeyValue::Int(i) => i.to_string(),
        KeyValue::Text(s) => s.clone(),
    }
}

/// Released key -> source key for one table, in the plan's PK column order.
fn translation(
    ft: &FamilyTable,
    map: &KeyMap,
    released_rows: usize,
    out: &mut Check,
) -> Result<HashMap<Vec<String>, Vec<String>>, VerifyError> {
    let entry = map.tables.get(&ft.name).or_else(|| {
        map.tables
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&ft.name))
            .map(|(_, t)| t)
    });
    let Some(tk) = entry else {
        if released_rows == 0 {
            return Ok(HashMap::new());
        }
        return Err(VerifyError::KeyMapMissingTable {
            table: ft.name.clone(),
        });
    };
    let perm: Option<Vec<usize>> = ft
        .primary_key
        .iter()
        .map(|c| {
            tk.columns
                .iter()
                .position(|m| m == c)
                .or_else(|| tk.columns.iter().position(|m| m.eq_ignore_ascii_case(c)))
        })
        .collect();
    let perm = match perm {
        Some(p) if tk.columns.len() == ft.primary_key.len() => p,
        _ => {
            return Err(VerifyError::KeyMapColumns {
                table: ft.name.clone(),
                found: tk.columns.join(", "),
                expected: ft.primary_key.join(", "),
            })
        }
    };
    let n = perm.len();
    let mut m: HashMap<Vec<String>, Vec<String>> = HashMap::with_capacity(tk.pairs.len());
    for pair in &tk.pairs {
        for found in [pair.released.len(), pair.source.len()] {
            if found != n {
                return Err(VerifyError::KeyMapArity {
                    table: ft.name.clone(),
                    expected: n,
                    found,
                });
            }
        }
        let released: Vec<String> = perm
            .iter()
            .map(|&i| render_key_value(&pair.released[i]))
            .collect();
        let source: Vec<String> = perm
            .iter()
            .map(|&i| render_key_value(&pair.source[i]))
            .collect();
        match m.entry(released) {
            Entry::Occupied(e) => {
                if *e.get() != source {
                    out.record(format!(
                        "the key map sends {} key {} to two source keys ({} and {})",
                        ft.name,
                        show_key(Some(e.key())),
                        show_key(Some(e.get())),
                        show_key(Some(&source))
                    ));
                }
            }
            Entry::Vacant(e) => {
                e.insert(source);
            }
        }
    }
    Ok(m)
}

fn by_key(
    ft: &FamilyTable,
    tables: &[TableData],
    ti: usize,
    keys: &Keys<'_>,
    out: &mut Check,
) -> Result<Vec<Option<usize>>, VerifyError> {
    let t = &tables[ti];
    let mut src_index: HashMap<Vec<String>, usize> = HashMap::with_capacity(t.src.rows());
    for s in 0..t.src.rows() {
        if let Some(k) = t.src.key(&t.src_pk, s) {
            src_index.entry(k).or_insert(s);
        }
    }
    let translate = match keys {
        Keys::Preserved => None,
        Keys::Map(map) => Some(translation(ft, map, t.rel.rows(), out)?),
    };
    let mut claimed: Vec<Option<usize>> = vec![None; t.src.rows()];
    let mut mapped = vec![None; t.rel.rows()];
    for (r, slot) in mapped.iter_mut().enumerate() {
        // A NULL key is the key-atomicity check's to report; it names no source row.
        let Some(rk) = t.rel.key(&t.rel_pk, r) else {
            continue;
        };
        let sk = match &translate {
            None => &rk,
            Some(m) => match m.get(&rk) {
                Some(sk) => sk,
                None => {
                    out.record(format!(
                        "{} key {}: the key map has no source key for it",
                        t.name,
                        show_key(Some(&rk))
                    ));
                    continue;
                }
            },
        };
        let Some(&s) = src_index.get(sk) else {
            let how = if translate.is_some() {
                "its source key"
            } else {
                "the key"
            };
            out.record(format!(
                "{} key {}: {how} {} is not in the source",
                t.name,
                show_key(Some(&rk)),
                show_key(Some(sk))
            ));
            continue;
        };
        if let Some(other) = claimed[s] {
            out.record(format!(
                "{} and {} both stand for source {} key {}; each released row must be a distinct source row",
                t.describe(tables, other),
                t.describe(tables, r),
                t.name,
                show_key(Some(sk))
            ));
            continue;
        }
        claimed[s] = Some(r);
        *slot = Some(s);
    }
    Ok(mapped)
}

fn source_name(t: &TableData, s: usize) -> String {
    if t.src_pk.is_empty() {
        format!("{} source row {}", t.name, s + 1)
    } else {
        format!(
            "{} key {}",
            t.name,
            show_key(t.src.key(&t.src_pk, s).as_deref())
        )
    }
}

/// Structure and cell truth of every traced row of a keyed table.
fn check_pairs(tables: &[TableData], ti: usize, hiers: &HashMap<String, Hier>, out: &mut Check) {
    let t = &tables[ti];
    for (r, s) in t.rel_to_src.iter().enumerate() {
        let Some(s) = *s else { continue };
        if let Some(p) = t.parent {
            let parent = &tables[p];
            // An unresolved FK or an untraced parent is already reported elsewhere.
            if let Some(ps) = t.rel_parent[r].and_then(|pr| parent.rel_to_src[pr]) {
                if t.src_parent[s] != Some(ps) {
                    let actual = t.src_parent[s].map_or_else(
                        || "no source parent".to_string(),
                        |a| source_name(parent, a),
                    );
                    out.record(format!(
                        "{}: released under a parent standing for source {}, but its source row belongs to {}",
                        t.describe(tables, r),
                        source_name(parent, ps),
                        actual
                    ));
                }
            }
        }
        for c in &t.content {
            let rv = t.rel.cell(c.rel, r);
            let sv = t.src.cell(c.src, s);
            if !cell_ok(c, rv.as_deref(), sv.as_deref(), hiers) {
                let what = match &c.rule {
                    Rule::Qi(h) => format!(
                        "is neither the source value {} nor an ancestor of it in hierarchy '{h}'",
                        show_cell(sv.as_deref())
                    ),
                    Rule::Exact { .. } => {
                        format!("differs from the source value {}", show_cell(sv.as_deref()))
                    }
                };
                out.record(format!(
                    "{}: {} = {} {what}",
                    t.describe(tables, r),
                    c.name,
                    show_cell(rv.as_deref())
                ));
            }
        }
    }
}

/// Numeric cells compare as numbers (a Decimal "12.30" and a Float "12.3" are one value);
/// integers stay exact text so large ids never collide through f64.
fn normalize(numeric: bool, v: Option<String>) -> Option<String> {
    let s = v?;
    if !numeric || s.parse::<i64>().is_ok() {
        return Some(s);
    }
    match s.parse::<f64>() {
        Ok(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(format!("{}", f as i64)),
        Ok(f) => Some(format!("{f}")),
        Err(_) => Some(s),
    }
}

fn qi_ok(hier: Option<&Hier>, label: Option<&str>, value: Option<&str>) -> bool {
    match (label, value) {
        (None, None) => true,
        (None, Some(_)) => false,
        (Some(ROOT), _) => true,
        // A NULL source value is its own leaf: only NULL or the root stand for it.
        (Some(_), None) => false,
        (Some(l), Some(v)) => l == v || hier.is_some_and(|h| h.admits(l, v)),
    }
}

fn cell_ok(
    c: &Content,
    rel: Option<&str>,
    src: Option<&str>,
    hiers: &HashMap<String, Hier>,
) -> bool {
    match &c.rule {
        Rule::Qi(h) => qi_ok(hiers.get(h), rel, src),
        Rule::Exact { numeric } => {
            rel == src
                || normalize(*numeric, rel.map(str::to_string))
                    == normalize(*numeric, src.map(str::to_string))
        }
    }
}

/// A key-less table: within each traced parent, pair released children with source
/// children by a maximum bipartite matching over "may stand for" edges.
fn by_content(
    tables: &[TableData],
    ti: usize,
    hiers: &HashMap<String, Hier>,
    out: &mut Check,
) -> Vec<Option<usize>> {
    // Group id: the traced source parent row; a parent-less table is one group.
    const ROOT_GROUP: usize = usize::MAX;
    let t = &tables[ti];
    let mut mapped = vec![None; t.rel.rows()];
    let mut groups: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
    let mut order: Vec<usize> = Vec::new();
    for r in 0..t.rel.rows() {
        let g = match t.parent {
            None => ROOT_GROUP,
            // An unresolved FK or an untraced parent is already reported elsewhere.
            Some(p) => match t.rel_parent[r].and_then(|pr| tables[p].rel_to_src[pr]) {
                Some(ps) => ps,
                None => continue,
            },
        };
        match groups.entry(g) {
            Entry::Occupied(mut e) => e.get_mut().0.push(r),
            Entry::Vacant(e) => {
                order.push(g);
                e.insert((vec![r], Vec::new()));
            }
        }
    }
    for s in 0..t.src.rows() {
        let g = match t.parent {
            None => ROOT_GROUP,
            Some(_) => match t.src_parent[s] {
                Some(ps) => ps,
                None => continue,
            },
        };
        if let Some(group) = groups.get_mut(&g) {
            group.1.push(s);
        }
    }

    let exact: Vec<&Content> = t
        .content
        .iter()
        .filter(|c| matches!(c.rule, Rule::Exact { .. }))
        .collect();
    let qi: Vec<&Content> = t
        .content
        .iter()
        .filter(|c| matches!(c.rule, Rule::Qi(_)))
        .collect();
    let exact_key = |side: &super::data::Side, is_src: bool, row: usize| -> Vec<Option<String>> {
        exact
            .iter()
            .map(|c| {
                let numeric = matches!(c.rule, Rule::Exact { numeric: true });
                normalize(numeric, side.cell(if is_src { c.src } else { c.rel }, row))
            })
            .collect()
    };
    let scope = if t.parent.is_some() {
        "no source row under the same parent"
    } else {
        "no source row"
    };

    for g in order {
        let Some((rels, srcs)) = groups.get(&g) else {
            continue;
        };
        // Exact columns must agree outright, so they bucket the candidates; only the QI
        // columns need a pairwise test.
        let mut buckets: HashMap<Vec<Option<String>>, Vec<usize>> = HashMap::new();
        for (j, &s) in srcs.iter().enumerate() {
            buckets
                .entry(exact_key(&t.src, true, s))
                .or_default()
                .push(j);
        }
        let src_qi: Vec<Vec<Option<String>>> = srcs
            .iter()
            .map(|&s| qi.iter().map(|c| t.src.cell(c.src, s)).collect())
            .collect();
        let adj: Vec<Vec<usize>> = rels
            .iter()
            .map(|&r| {
                let labels: Vec<Option<String>> = qi.iter().map(|c| t.rel.cell(c.rel, r)).collect();
                let Some(cands) = buckets.get(&exact_key(&t.rel, false, r)) else {
                    return Vec::new();
                };
                cands
                    .iter()
                    .copied()
                    .filter(|&j| {
                        qi.iter().zip(&labels).zip(&src_qi[j]).all(|((c, l), v)| {
                            let h = match &c.rule {
                                Rule::Qi(h) => hiers.get(h),
                                Rule::Exact { .. } => None,
                            };
                            qi_ok(h, l.as_deref(), v.as_deref())
                        })
                    })
                    .collect()
            })
            .collect();
        let matching = max_matching(&adj, srcs.len());
        for (i, &r) in rels.iter().enumerate() {
            match matching[i] {
                Some(j) => mapped[r] = Some(srcs[j]),
                None if adj[i].is_empty() => out.record(format!(
                    "{}: {scope} has values it can stand for",
                    t.describe(tables, r)
                )),
                None => out.record(format!(
                    "{}: more released rows than source rows under the same parent that it can stand for",
                    t.describe(tables, r)
                )),
            }
        }
    }
    mapped
}
