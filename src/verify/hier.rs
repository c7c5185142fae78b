//! Hierarchy ancestry, re-derived from the plan's definitions on purpose: the verifier must
//! not trust `crate::hierarchy`, so a label's truth is decided here from the raw rows,
//! widths and date parts alone.

use std::collections::HashMap;

use crate::plan::HierarchyDef;
use crate::policy::DatePart;

/// The root label every hierarchy shares.
pub(super) const ROOT: &str = "*";

/// A hierarchy reduced to what deciding "is this label an ancestor of that value" needs.
#[derive(Debug)]
pub(super) enum Hier {
    /// Label -> parent labels. A well-formed hierarchy has one parent per label; several are
    /// kept (and any of them accepted) so a malformed one cannot crash the check.
    Rows(HashMap<String, Vec<String>>),
    Bands(Vec<f64>),
    Dates(Vec<DatePart>),
}

impl Hier {
    pub(super) fn compile(def: &HierarchyDef) -> Hier {
        match def {
            HierarchyDef::Rows { rows, .. } => {
                let mut parents: HashMap<String, Vec<String>> = HashMap::new();
                for row in rows {
                    let mut labels: &[String] = row;
                    if labels.last().is_some_and(|l| l == ROOT) {
                        labels = &labels[..labels.len() - 1];
                    }
                    for pair in labels.windows(2) {
                        let (child, parent) = (&pair[0], &pair[1]);
                        // Repeated labels in a row are one node (ARX pads short paths so).
                        if child == parent || parent == ROOT {
                            continue;
                        }
                        let entry = parents.entry(child.clone()).or_default();
                        if !entry.contains(parent) {
                            entry.push(parent.clone());
                        }
                    }
                }
                Hier::Rows(parents)
            }
            HierarchyDef::Bands { widths, .. } => Hier::Bands(widths.clone()),
            HierarchyDef::DateParts { parts, .. } => Hier::Dates(parts.clone()),
        }
    }

    /// Whether `label` may stand for the source value `value` (both rendered as text):
    /// the value itself, the root, or a proper ancestor of it.
    pub(super) fn admits(&self, label: &str, value: &str) -> bool {
        if label == ROOT || label == value {
            return true;
        }
        match self {
            Hier::Rows(parents) => rows_admit(parents, label, value),
            Hier::Bands(widths) => bands_admit(widths, label, value),
            Hier::Dates(parts) => dates_admit(parts, label, value),
        }
    }
}

/// Where a label sits: its depth below the root (`*` is 0) and whether it is a leaf (a
/// source value, which a top-aligned level keeps from 0 up to where its ancestors begin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub depth: usize,
    pub leaf: bool,
}

impl Hier {
    /// The [`Place`] of `label`, for the single-dimensional check of a statistical hybrid
    /// release; None where it is no node this hierarchy can place.
    pub(super) fn place(&self, label: &str) -> Option<Place> {
        if label == ROOT {
            return Some(Place {
                depth: 0,
                leaf: false,
            });
        }
        match self {
            Hier::Rows(parents) => {
                // Down from the root: one more than its first parent chain (a malformed,
                // cyclic hierarchy stops at its size).
                let mut depth = 1;
                let mut node = label;
                while let Some(parent) = parents.get(node).and_then(|p| p.first()) {
                    depth += 1;
                    node = parent;
                    if depth > parents.len() + 1 {
                        return None;
                    }
                }
                let leaf = !parents.values().any(|ps| ps.iter().any(|p| p == label));
                Some(Place { depth, leaf })
            }
            Hier::Bands(widths) => {
                let n = widths.len();
                match parse_band(label) {
                    Some((a, b, inclusive)) => {
                        let width = if inclusive { b - a + 1.0 } else { b - a };
                        let i = widths.iter().position(|&w| close(w, width))?;
                        Some(Place {
                            depth: n - i,
                            leaf: false,
                        })
                    }
                    None => label.trim().parse::<f64>().ok().map(|_| Place {
                        depth: n + 1,
                        leaf: true,
                    }),
                }
            }
            Hier::Dates(parts) => {
                let n = parts.len();
                if parse_date(label).is_some() {
                    return Some(Place {
                        depth: n + 1,
                        leaf: true,
                    });
                }
                let part = date_part(label)?;
                let i = parts.iter().position(|p| *p == part)?;
                Some(Place {
                    depth: n - i,
                    leaf: false,
                })
            }
        }
    }
}

/// Which node of a level a label or a value falls in, for Pearson's test of a statistical
/// hybrid release: equal keys, one group. A released label keys as itself, a band by its
/// width and place (its text need not be re-rendered); a source value keys as its ancestor at
/// the node's generalized depth (`None`: the column is not generalized, every value is its
/// own node; a value no deeper than the depth is kept, the levels being top-aligned).
impl Hier {
    pub(super) fn label_key(&self, label: &str) -> String {
        if let (Hier::Bands(widths), Some((a, b, inclusive))) = (self, parse_band(label)) {
            let width = if inclusive { b - a + 1.0 } else { b - a };
            if let Some(i) = widths.iter().position(|&w| close(w, width)) {
                return band_key(i, (a / widths[i]).round());
            }
        }
        label.to_string()
    }

    pub(super) fn value_key(&self, value: &str, depth: Option<usize>) -> String {
        let Some(depth) = depth else {
            return value.to_string();
        };
        if depth == 0 {
            return ROOT.to_string();
        }
        match self {
            Hier::Rows(parents) => {
                let mut chain = vec![value];
                while let Some(parent) = chain.last().and_then(|n| parents.get(*n)?.first()) {
                    if chain.len() > parents.len() + 1 {
                        break;
                    }
                    chain.push(parent);
                }
                // chain[0] sits at depth chain.len(); its ancestor at `depth` is that many up.
                let up = chain.len().saturating_sub(depth);
                chain.get(up).map_or(value, |n| n).to_string()
            }
            Hier::Bands(widths) => {
                let n = widths.len();
                let (Some(i), Ok(v)) = (n.checked_sub(depth), value.trim().parse::<f64>()) else {
                    return value.to_string();
                };
                let Some(&w) = widths.get(i) else {
                    return value.to_string();
                };
                let q = v / w;
                band_key(
                    i,
                    if close(q, q.round()) {
                        q.round()
                    } else {
                        q.floor()
                    },
                )
            }
            Hier::Dates(parts) => {
                let n = parts.len();
                let (Some(part), Some((year, month))) = (
                    n.checked_sub(depth).and_then(|i| parts.get(i)),
                    parse_date(value),
                ) else {
                    return value.to_string();
                };
                match part {
                    DatePart::Year => format!("{year:04}"),
                    DatePart::Decade => format!("{:04}s", year - year.rem_euclid(10)),
                    DatePart::Quarter => format!("{year:04}-Q{}", (month - 1) / 3 + 1),
                    DatePart::Month => format!("{year:04}-{month:02}"),
                }
            }
        }
    }
}

fn band_key(width: usize, place: f64) -> String {
    format!("band {width}: {place}")
}

/// The date part a generalized date label names by its shape (`2021`, `2020s`, `2021-Q1`,
/// `2021-03`).
fn date_part(label: &str) -> Option<DatePart> {
    let lb = label.as_bytes();
    match lb.len() {
        4 => digits(label).map(|_| DatePart::Year),
        5 if lb[4] == b's' => label.get(0..4).and_then(digits).map(|_| DatePart::Decade),
        7 if lb[4] == b'-' && lb[5] == b'Q' => Some(DatePart::Quarter),
        7 if lb[4] == b'-' => Some(DatePart::Month),
        _ => None,
    }
}

fn rows_admit(parents: &HashMap<String, Vec<String>>, label: &str, value: &str) -> bool {
    // Depth-first over the (normally single) parent chain; `seen` stops a cyclic,
    // malformed hierarchy from looping.
    let mut stack: Vec<&str> = vec![value];
    let mut seen: Vec<&str> = Vec::new();
    while let Some(node) = stack.pop() {
        if seen.contains(&node) {
            continue;
        }
        seen.push(node);
        for parent in parents.get(node).into_iter().flatten() {
            if parent == label {
                return true;
            }
            stack.push(parent);
        }
    }
    false
}

/// Relative tolerance for band arithmetic on floats (0.3 / 0.1 is not exactly 3).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn is_multiple(a: f64, w: f64) -> bool {
    let q = a / w;
    close(q, q.round())
}

/// `[a,b]` (inclusive, integral data) or `[a,b)` (half-open): (a, b, inclusive).
fn parse_band(label: &str) -> Option<(f64, f64, bool)> {
    let inner = label.strip_prefix('[')?;
    let (inner, inclusive) = match inner.strip_suffix(']') {
        Some(i) => (i, true),
        None => (inner.strip_suffix(')')?, false),
    };
    let (a, b) = inner.split_once(',')?;
    let a: f64 = a.trim().parse().ok()?;
    let b: f64 = b.trim().parse().ok()?;
    (a.is_finite() && b.is_finite()).then_some((a, b, inclusive))
}

fn bands_admit(widths: &[f64], label: &str, value: &str) -> bool {
    let (Some((a, b, inclusive)), Ok(v)) = (parse_band(label), value.trim().parse::<f64>()) else {
        return false;
    };
    let width = if inclusive { b - a + 1.0 } else { b - a };
    let inside = if inclusive {
        a <= v && v <= b
    } else {
        a <= v && v < b
    };
    // The band must be a node of the hierarchy (a declared width, anchored at 0), not
    // merely an interval that happens to contain the value.
    inside
        && widths
            .iter()
            .any(|&w| w > 0.0 && close(w, width) && is_multiple(a, w))
}

/// (year, month) of a value rendered `YYYY-MM-DD...` (a date, or a timestamp starting so).
fn parse_date(value: &str) -> Option<(i32, u32)> {
    let b = value.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(value.get(0..4)?)?;
    let month = digits(value.get(5..7)?)?;
    digits(value.get(8..10)?)?;
    (1..=12).contains(&month).then_some((year as i32, month))
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn dates_admit(parts: &[DatePart], label: &str, value: &str) -> bool {
    let Some((year, month)) = parse_date(value) else {
        return false;
    };
    // A timestamp's leaf is its date.
    if value.len() > 10 && value.get(0..10) == Some(label) {
        return true;
    }
    let year_of = |s: &str| digits(s).map(|y| y as i32);
    let lb = label.as_bytes();
    let (part, ok) = match lb.len() {
        4 => (DatePart::Year, year_of(label) == Some(year)),
        5 if lb[4] == b's' => {
            let decade = label.get(0..4).and_then(year_of);
            (
                DatePart::Decade,
                decade.is_some_and(|d| d % 10 == 0 && d == year - year.rem_euclid(10)),
            )
        }
        7 if lb[4] == b'-' && lb[5] == b'Q' => {
            let y = label.get(0..4).and_then(year_of);
            let q = label.get(6..7).and_then(digits);
            (
                DatePart::Quarter,
                y == Some(year) && q == Some((month - 1) / 3 + 1),
            )
        }
        7 if lb[4] == b'-' => {
            let y = label.get(0..4).and_then(year_of);
            let m = label.get(5..7).and_then(digits);
            (DatePart::Month, y == Some(year) && m == Some(month))
        }
        _ => return false,
    };
    ok && parts.contains(&part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Pos;

    fn rows(rows: &[&[&str]]) -> Hier {
        let rows = rows
            .iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect();
        Hier::compile(&HierarchyDef::Rows {
            rows,
            pos: Pos::default(),
        })
    }

    #[test]
    fn rows_walk_up_and_collapse_repeats() {
        let h = rows(&[
            &["Math", "Science", "*"],
            &["Rome", "History", "History", "Humanities"],
        ]);
        assert!(h.admits("Math", "Math"));
        assert!(h.admits("Science", "Math"));
        assert!(h.admits("*", "Math"));
        assert!(h.admits("Humanities", "Rome"));
        assert!(!h.admits("Humanities", "Math"));
        assert!(
            !h.admits("Math", "Science"),
            "a descendant is not an ancestor"
        );
        assert!(h.admits("*", "unknown value"));
        assert!(!h.admits("Science", "unknown value"));
    }

    #[test]
    fn bands_need_a_declared_width_anchored_at_zero() {
        let h = Hier::compile(&HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: None,
            pos: Pos::default(),
        });
        assert!(h.admits("[20,29]", "25"));
        assert!(h.admits("[25,29]", "29"));
        assert!(h.admits("[20,30)", "29.5"));
        assert!(!h.admits("[20,30)", "30"));
        assert!(!h.admits("[20,29]", "30"));
        assert!(
            !h.admits("[21,30]", "25"),
            "not anchored at a multiple of the width"
        );
        assert!(!h.admits("[0,19]", "5"), "width 20 not declared");
        assert!(!h.admits("[-10,-1]", "x"));
        assert!(h.admits("[-10,-1]", "-3"));
        let small = Hier::compile(&HierarchyDef::Bands {
            widths: vec![0.1],
            range: None,
            pos: Pos::default(),
        });
        assert!(small.admits("[0.3,0.4)", "0.35"));
    }

    #[test]
    fn date_parts_contain_the_date() {
        let h = Hier::compile(&HierarchyDef::DateParts {
            parts: vec![
                DatePart::Month,
                DatePart::Quarter,
                DatePart::Year,
                DatePart::Decade,
            ],
            pos: Pos::default(),
        });
        assert!(h.admits("2021-03", "2021-03-05"));
        assert!(h.admits("2021-Q1", "2021-03-05"));
        assert!(h.admits("2021", "2021-03-05 10:00:00"));
        assert!(h.admits("2021-03-05", "2021-03-05 10:00:00"));
        assert!(h.admits("2020s", "2021-03-05"));
        assert!(!h.admits("2021-04", "2021-03-05"));
        assert!(!h.admits("2021-Q2", "2021-03-05"));
        assert!(!h.admits("2010s", "2021-03-05"));
        assert!(!h.admits("2021", "not a date"));
        let months_only = Hier::compile(&HierarchyDef::DateParts {
            parts: vec![DatePart::Month],
            pos: Pos::default(),
        });
        assert!(
            !months_only.admits("2021", "2021-03-05"),
            "year is not a level of this hierarchy"
        );
    }
}
