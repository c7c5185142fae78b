//! Generalization hierarchies (DGHs) as flat arrays: interned node codes, parent array,
//! depths and leaf counts precomputed, so `gen` (lowest common ancestor) and LM' are a few
//! array reads. Built from a resolved [`HierarchyDef`] and the column's data, which also
//! yields every row's leaf code.
//!
//! Decisions (documented in the README): a NULL in a QI column is its own leaf, `NULL`,
//! directly under the root; numeric bands and date parts have the column's distinct data
//! values as leaves, so their LM counts data values.

use std::collections::HashMap;

use crate::plan::HierarchyDef;
use crate::policy::DatePart;

/// The root label of every hierarchy.
pub const ROOT: &str = "*";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HierarchyError {
    #[error("hierarchy '{hierarchy}' declared at {pos} is not a tree: {detail}; give every value one parent and no cycles")]
    NotATree {
        hierarchy: String,
        pos: String,
        detail: String,
    },
    #[error("column {column}: {count} distinct value(s) in {rows} row(s) are not leaves of hierarchy '{hierarchy}', e.g. {examples}; {fix}")]
    NotALeaf {
        column: String,
        hierarchy: String,
        /// Distinct values that are not leaves.
        count: usize,
        /// Rows holding one of them.
        rows: usize,
        examples: String,
        /// What to do, for the kind of hierarchy and of value: add them to a hierarchy of
        /// rows (with a hint when a value misses a leaf only by surrounding whitespace),
        /// widen a band range, fix dates that are no calendar date, ...
        fix: String,
    },
}

/// One built hierarchy for one QI column.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Hierarchy {
    name: String,
    /// Node label; `None` only for the NULL leaf (released as SQL NULL when not generalized).
    labels: Vec<Option<String>>,
    parent: Vec<u32>,
    depth: Vec<u16>,
    leaves: Vec<u32>,
    root: u32,
    total_leaves: u32,
    /// [`Hierarchy::loss`] of every node, computed once: it is read for every pair of
    /// nodes a clustering compares.
    losses: Vec<f64>,
}

/// A hierarchy together with the leaf code of every row of its column.
pub struct Built {
    pub hierarchy: Hierarchy,
    pub codes: Vec<u32>,
}

impl Hierarchy {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn root(&self) -> u32 {
        self.root
    }
    pub fn len(&self) -> usize {
        self.parent.len()
    }
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }
    /// Release text of a node (`None` for the ungeneralized NULL leaf).
    pub fn label(&self, code: u32) -> Option<&str> {
        self.labels[code as usize].as_deref()
    }
    pub fn parent(&self, code: u32) -> u32 {
        self.parent[code as usize]
    }
    pub fn leaf_count(&self, code: u32) -> u32 {
        self.leaves[code as usize]
    }
    pub fn total_leaves(&self) -> u32 {
        self.total_leaves
    }
    /// Edges from the root to `code` (the root is at depth 0).
    pub fn depth(&self, code: u32) -> u16 {
        self.depth[code as usize]
    }
    /// Levels from the deepest leaf to the root (`*` alone is height 0).
    pub fn height(&self) -> u16 {
        self.depth.iter().copied().max().unwrap_or(0)
    }

    /// `gen(v1, v2)` of 001 Alg. 3: the lowest common ancestor.
    pub fn lca(&self, mut a: u32, mut b: u32) -> u32 {
        // The clusterings ask this for every pair of nodes they compare, and a cluster's codes
        // soon reach the root or equal the other side's: answer those without the walk.
        if a == b {
            return a;
        }
        if a == self.root || b == self.root {
            return self.root;
        }
        while self.depth[a as usize] > self.depth[b as usize] {
            a = self.parent[a as usize];
        }
        while self.depth[b as usize] > self.depth[a as usize] {
            b = self.parent[b as usize];
        }
        while a != b {
            a = self.parent[a as usize];
            b = self.parent[b as usize];
        }
        a
    }

    /// LM' of one cell (001 Def. 8): (leaves under the value - 1) / (leaves of the domain - 1).
    pub fn loss(&self, code: u32) -> f64 {
        self.losses[code as usize]
    }

    /// The leaf code of each of a column's values, in a hierarchy built beforehand over the
    /// whole column: a shard's rows are coded as the whole's are, so codes, losses and labels
    /// mean the same in every shard. A value that is no leaf is refused as [`Hierarchy::build`]
    /// refuses it.
    pub fn encode(
        &self,
        column: &str,
        texts: &[Option<String>],
    ) -> Result<Vec<u32>, HierarchyError> {
        self.encoder().encode(column, texts)
    }

    /// The leaves by label, made once for a column read a batch at a time (a bands
    /// hierarchy over a money column has about a leaf a row: indexing them per batch cost
    /// more than the batch).
    pub fn encoder(&self) -> Encoder<'_> {
        let mut has_child = vec![false; self.len()];
        for (node, &p) in self.parent.iter().enumerate() {
            if node as u32 != self.root {
                has_child[p as usize] = true;
            }
        }
        let is_leaf = |node: usize| node as u32 != self.root && !has_child[node];
        let leaves: HashMap<&str, u32> = self
            .labels
            .iter()
            .enumerate()
            .filter(|&(node, _)| is_leaf(node))
            .filter_map(|(node, l)| l.as_deref().map(|l| (l, node as u32)))
            .collect();
        let null_leaf = (0..self.len())
            .find(|&n| is_leaf(n) && self.labels[n].is_none())
            .map(|n| n as u32);
        Encoder {
            name: &self.name,
            leaves,
            null_leaf,
        }
    }

    /// A hierarchy whose root is code 0, so it holds `leaves[0]` leaves in all.
    fn rooted_at_zero(
        name: String,
        labels: Vec<Option<String>>,
        parent: Vec<u32>,
        depth: Vec<u16>,
        leaves: Vec<u32>,
    ) -> Hierarchy {
        let total_leaves = leaves.first().copied().unwrap_or(0);
        Hierarchy {
            name,
            labels,
            parent,
            depth,
            losses: Hierarchy::losses(&leaves, total_leaves),
            leaves,
            root: 0,
            total_leaves,
        }
    }

    /// LM' of every node (see [`Hierarchy::loss`]).
    fn losses(leaves: &[u32], total_leaves: u32) -> Vec<f64> {
        leaves
            .iter()
            .map(|&l| {
                if total_leaves <= 1 {
                    0.0
                } else {
                    f64::from(l.saturating_sub(1)) / f64::from(total_leaves - 1)
                }
            })
            .collect()
    }

    /// A one-level hierarchy: `leaves` (codes 1..) directly under the root `*` (code 0). The
    /// bitmap baseline's bit columns (001 Sec. III-C) are such domains.
    pub fn flat(name: &str, leaves: &[&str]) -> Hierarchy {
        let n = leaves.len();
        let labels = std::iter::once(ROOT)
            .chain(leaves.iter().copied())
            .map(|l| Some(l.to_string()))
            .collect();
        Hierarchy::rooted_at_zero(
            name.to_string(),
            labels,
            vec![0; n + 1],
            std::iter::once(0)
                .chain(std::iter::repeat_n(1, n))
                .collect(),
            std::iter::once(n as u32)
                .chain(std::iter::repeat_n(1, n))
                .collect(),
        )
    }

    /// Builds the hierarchy `name` for one column. `texts` are the column's values rendered
    /// as text, `numbers` its numeric view (used by bands); `column` names it in errors.
    pub fn build(
        name: &str,
        def: &HierarchyDef,
        column: &str,
        texts: &[Option<String>],
        numbers: &[Option<f64>],
    ) -> Result<Built, HierarchyError> {
        let mut b = Builder::new(name);
        match def {
            HierarchyDef::Rows { rows, pos } => b.add_rows(rows, &pos.to_string())?,
            HierarchyDef::Bands { widths, range, pos } => b.add_bands(
                name,
                widths,
                *range,
                column,
                texts,
                numbers,
                &pos.to_string(),
            )?,
            HierarchyDef::DateParts { parts, .. } => b.add_dates(name, parts, column, texts)?,
        }
        b.finish(def, column, texts)
    }
}

/// A hierarchy's leaves indexed by label ([`Hierarchy::encoder`]).
pub struct Encoder<'h> {
    name: &'h str,
    leaves: HashMap<&'h str, u32>,
    null_leaf: Option<u32>,
}

impl Encoder<'_> {
    /// [`Hierarchy::encode`] with the leaves indexed once.
    pub fn encode(
        &self,
        column: &str,
        texts: &[Option<String>],
    ) -> Result<Vec<u32>, HierarchyError> {
        let mut bad = Vec::new();
        let codes = texts
            .iter()
            .map(|t| {
                let code = match t {
                    None => self.null_leaf,
                    Some(t) => self.leaves.get(t.as_str()).copied(),
                };
                code.unwrap_or_else(|| {
                    bad.push(t.clone().unwrap_or_else(|| "NULL".to_string()));
                    0
                })
            })
            .collect();
        if !bad.is_empty() {
            let mut leaf_labels: Vec<&str> = self.leaves.keys().copied().collect();
            leaf_labels.sort_unstable();
            not_leaves(column, self.name, bad, Fix::AddTo(&leaf_labels))?;
        }
        Ok(codes)
    }
}

/// Accumulates labelled nodes and parent links before freezing them into arrays.
struct Builder {
    name: String,
    ids: HashMap<String, u32>,
    labels: Vec<Option<String>>,
    parent: Vec<Option<u32>>,
    /// Where each parent link was declared, for "two parents" errors.
    parent_from: Vec<usize>,
    null_leaf: Option<u32>,
}

impl Builder {
    fn new(name: &str) -> Self {
        let mut b = Builder {
            name: name.to_string(),
            ids: HashMap::new(),
            labels: Vec::new(),
            parent: Vec::new(),
            parent_from: Vec::new(),
            null_leaf: None,
        };
        b.node(ROOT);
        b
    }

    fn node(&mut self, label: &str) -> u32 {
        if let Some(&id) = self.ids.get(label) {
            return id;
        }
        let id = self.labels.len() as u32;
        self.ids.insert(label.to_string(), id);
        self.labels.push(Some(label.to_string()));
        self.parent.push(None);
        self.parent_from.push(0);
        id
    }

    fn link(
        &mut self,
        child: u32,
        parent: u32,
        line: usize,
        pos: &str,
    ) -> Result<(), HierarchyError> {
        if child == parent {
            return Ok(());
        }
        match self.parent[child as usize] {
            None => {
                self.parent[child as usize] = Some(parent);
                self.parent_from[child as usize] = line;
                Ok(())
            }
            Some(p) if p == parent => Ok(()),
            Some(p) => Err(HierarchyError::NotATree {
                hierarchy: self.name.clone(),
                pos: pos.to_string(),
                detail: format!(
                    "'{}' has two parents, '{}' (row {}) and '{}' (row {})",
                    self.text(child),
                    self.text(p),
                    self.parent_from[child as usize],
                    self.text(parent),
                    line
                ),
            }),
        }
    }

    fn text(&self, id: u32) -> &str {
        self.labels[id as usize].as_deref().unwrap_or("NULL")
    }

    /// Rows are `leaf, parent, ...`; a trailing `*` and repeated neighbours are one node.
    fn add_rows(&mut self, rows: &[Vec<String>], pos: &str) -> Result<(), HierarchyError> {
        for (i, row) in rows.iter().enumerate() {
            let mut path: Vec<&str> = Vec::with_capacity(row.len());
            // Cells are matched byte for byte: a data value `'Edinburgh '` is a different
            // leaf from `'Edinburgh'` (see `whitespace_hint` for the error that says so).
            for cell in row.iter().map(String::as_str) {
                if cell.is_empty() || path.last() == Some(&cell) {
                    continue;
                }
                path.push(cell);
            }
            if path.last() != Some(&ROOT) {
                path.push(ROOT);
            }
            for pair in path.windows(2) {
                let (c, p) = (self.node(pair[0]), self.node(pair[1]));
                if c == 0 {
                    return Err(HierarchyError::NotATree {
                        hierarchy: self.name.clone(),
                        pos: pos.to_string(),
                        detail: format!("row {} puts the root '*' below '{}'", i + 1, pair[1]),
                    });
                }
                self.link(c, p, i + 1, pos)?;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn add_bands(
        &mut self,
        name: &str,
        widths: &[f64],
        range: Option<(f64, f64)>,
        column: &str,
        texts: &[Option<String>],
        numbers: &[Option<f64>],
        pos: &str,
    ) -> Result<(), HierarchyError> {
        for w in widths.windows(2) {
            let ratio = w[1] / w[0];
            if (ratio - ratio.round()).abs() > 1e-9 || ratio < 1.5 {
                return Err(HierarchyError::NotATree {
                    hierarchy: name.to_string(),
                    pos: pos.to_string(),
                    detail: format!(
                        "band width {} does not divide {}, so bands would overlap",
                        w[0], w[1]
                    ),
                });
            }
        }
        let integral = numbers.iter().flatten().all(|v| v.fract() == 0.0);
        let (mut bad, mut outside) = (Vec::new(), 0);
        for (text, num) in texts.iter().zip(numbers) {
            let (Some(text), Some(v)) = (text, num) else {
                if text.is_some() {
                    bad.push(text.clone().unwrap_or_default());
                }
                continue;
            };
            if let Some((lo, hi)) = range {
                if *v < lo || *v > hi {
                    bad.push(text.clone());
                    outside += 1;
                    continue;
                }
            }
            let leaf = self.node(text);
            let mut child = leaf;
            for w in widths {
                let a = (v / w).floor() * w;
                let label = if integral {
                    format!("[{},{}]", a, a + w - 1.0)
                } else {
                    format!("[{},{})", a, a + w)
                };
                let p = self.node(&label);
                self.link(child, p, 0, pos)?;
                child = p;
            }
            self.link(child, 0, 0, pos)?;
        }
        let fix = match range {
            Some((lo, hi)) if outside == bad.len() => format!(
                "they lie outside BETWEEN {lo} AND {hi}: widen the range (or fix the data)"
            ),
            _ => "BANDS generalizes numbers and these are not all numbers (or within BETWEEN): fix the data, or use a VALUES or CSV hierarchy".to_string(),
        };
        not_leaves(column, name, bad, Fix::Say(fix))
    }

    fn add_dates(
        &mut self,
        name: &str,
        parts: &[DatePart],
        column: &str,
        texts: &[Option<String>],
    ) -> Result<(), HierarchyError> {
        let mut bad = Vec::new();
        for text in texts.iter().flatten() {
            let Some((year, month)) = parse_date(text) else {
                bad.push(text.clone());
                continue;
            };
            let mut child = self.node(text);
            for part in parts {
                let label = match part {
                    DatePart::Month => format!("{year:04}-{month:02}"),
                    DatePart::Quarter => format!("{year:04}-Q{}", (month - 1) / 3 + 1),
                    DatePart::Year => format!("{year:04}"),
                    DatePart::Decade => format!("{:04}s", year - year.rem_euclid(10)),
                };
                let p = self.node(&label);
                self.link(child, p, 0, "")?;
                child = p;
            }
            self.link(child, 0, 0, "")?;
        }
        let fix = "DATE PARTS generalizes calendar dates (YYYY-MM-DD, a time may follow) and these are none: fix the data, or use a VALUES or CSV hierarchy";
        not_leaves(column, name, bad, Fix::Say(fix.to_string()))
    }

    /// Freezes the arrays, checks for cycles and maps every value to its leaf.
    fn finish(
        mut self,
        def: &HierarchyDef,
        column: &str,
        texts: &[Option<String>],
    ) -> Result<Built, HierarchyError> {
        if texts.iter().any(Option::is_none) {
            let id = self.labels.len() as u32;
            self.labels.push(None);
            self.parent.push(Some(0));
            self.parent_from.push(0);
            self.null_leaf = Some(id);
        }
        let n = self.labels.len();
        let pos = match def {
            HierarchyDef::Rows { pos, .. }
            | HierarchyDef::Bands { pos, .. }
            | HierarchyDef::DateParts { pos, .. } => pos.to_string(),
        };
        // Depth by walking up; a walk longer than the node count is a cycle.
        let mut depth = vec![u16::MAX; n];
        depth[0] = 0;
        let mut parent = vec![0u32; n];
        for start in 1..n {
            let mut path = vec![start as u32];
            let mut cur = start as u32;
            while depth[cur as usize] == u16::MAX {
                let Some(p) = self.parent[cur as usize] else {
                    // A label that only ever appears as a parent of nothing above: hang it under the root.
                    self.parent[cur as usize] = Some(0);
                    continue;
                };
                if path.len() > n {
                    return Err(HierarchyError::NotATree {
                        hierarchy: self.name.clone(),
                        pos,
                        detail: format!(
                            "'{}' is its own ancestor (a cycle)",
                            self.text(start as u32)
                        ),
                    });
                }
                cur = p;
                path.push(cur);
            }
            let mut d = depth[cur as usize];
            for &node in path.iter().rev().skip(1) {
                d = d.saturating_add(1);
                depth[node as usize] = d;
            }
        }
        for (i, p) in self.parent.iter().enumerate() {
            parent[i] = p.unwrap_or(0);
        }
        parent[0] = 0;
        let mut has_child = vec![false; n];
        for &p in parent.iter().skip(1) {
            has_child[p as usize] = true;
        }
        let mut leaves = vec![0u32; n];
        // Every leaf adds one to itself and each ancestor up to the root.
        let leaf_nodes = (1..n).filter(|&i| !has_child[i]);
        for leaf in leaf_nodes {
            let mut cur = leaf as u32;
            loop {
                leaves[cur as usize] += 1;
                if cur == 0 {
                    break;
                }
                cur = parent[cur as usize];
            }
        }
        if n == 1 {
            leaves[0] = 1;
        }
        let mut codes = Vec::with_capacity(texts.len());
        let mut bad = Vec::new();
        for t in texts {
            match t {
                None => codes.push(self.null_leaf.unwrap_or(0)),
                Some(t) => match self.ids.get(t.as_str()) {
                    Some(&id) if !has_child[id as usize] && id != 0 => codes.push(id),
                    _ => {
                        bad.push(t.clone());
                        codes.push(0);
                    }
                },
            }
        }
        let leaf_labels: Vec<&str> = (1..n)
            .filter(|&i| !has_child[i])
            .filter_map(|i| self.labels[i].as_deref())
            .collect();
        not_leaves(column, &self.name, bad, Fix::AddTo(&leaf_labels))?;
        Ok(Built {
            hierarchy: Hierarchy::rooted_at_zero(self.name, self.labels, parent, depth, leaves),
            codes,
        })
    }
}

/// What a [`HierarchyError::NotALeaf`] tells the owner to do.
enum Fix<'a> {
    /// Add the values to a hierarchy of rows whose leaves are these.
    AddTo(&'a [&'a str]),
    /// This.
    Say(String),
}

fn not_leaves(
    column: &str,
    hierarchy: &str,
    mut bad: Vec<String>,
    fix: Fix,
) -> Result<(), HierarchyError> {
    if bad.is_empty() {
        return Ok(());
    }
    let fix = if bad.iter().any(|v| v == "*") {
        "'*' is the root every hierarchy ends in, so no value may be '*': replace it in the data (a missing value is NULL)".to_string()
    } else {
        match fix {
            Fix::AddTo(leaves) => format!(
                "add them to the hierarchy (or fix the data){}",
                whitespace_hint(&bad, leaves)
            ),
            Fix::Say(s) => s,
        }
    };
    let rows = bad.len();
    bad.sort();
    bad.dedup();
    let count = bad.len();
    let examples = bad
        .iter()
        .take(5)
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(HierarchyError::NotALeaf {
        column: column.to_string(),
        hierarchy: hierarchy.to_string(),
        count,
        rows,
        examples,
        fix,
    })
}

/// The first value of `bad` that equals a leaf once surrounding whitespace is removed from
/// both, told with both spellings: the data owner sees two identical-looking words otherwise.
fn whitespace_hint(bad: &[String], leaves: &[&str]) -> String {
    let by_trimmed: HashMap<&str, &str> = leaves.iter().map(|l| (l.trim(), *l)).collect();
    bad.iter()
        .find_map(|v| {
            by_trimmed.get(v.trim()).map(|leaf| {
                format!(
                    ". The value {v:?} differs from the leaf {leaf:?} only by surrounding whitespace; values are matched byte for byte, so spell the hierarchy cell exactly as the data holds it"
                )
            })
        })
        .unwrap_or_default()
}

/// `YYYY-MM-DD` (optionally followed by a time) to (year, month).
pub(crate) fn parse_date(text: &str) -> Option<(i32, u32)> {
    let bytes = text.as_bytes();
    if bytes.len() < 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year: i32 = text.get(0..4)?.parse().ok()?;
    let month: u32 = text.get(5..7)?.parse().ok()?;
    let day: u32 = text.get(8..10)?.parse().ok()?;
    ((1..=12).contains(&month) && (1..=days_in(year, month)).contains(&day))
        .then_some((year, month))
}

/// Days of `month` in `year` (proleptic Gregorian): `2021-02-30` is no date.
fn days_in(year: i32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Pos;

    #[test]
    fn only_calendar_dates_are_dates() {
        assert_eq!(parse_date("2021-02-28"), Some((2021, 2)));
        assert_eq!(parse_date("2021-02-29"), None);
        assert_eq!(parse_date("2020-02-29"), Some((2020, 2)));
        assert_eq!(parse_date("1900-02-29"), None);
        assert_eq!(parse_date("2000-02-29"), Some((2000, 2)));
        assert_eq!(parse_date("2021-04-31"), None);
        assert_eq!(parse_date("2021-02-30 10:00:00"), None);
    }

    fn texts(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|s| Some(s.to_string())).collect()
    }
    fn course() -> HierarchyDef {
        HierarchyDef::from_rows(&[
            &["Math", "Science"],
            &["CS", "Science"],
            &["Physics", "Science"],
            &["Chemistry", "Science"],
            &["History", "Social"],
            &["Religion", "Social"],
            &["Economics", "Social"],
            &["Philosophy", "Social"],
        ])
    }

    #[test]
    fn lca_and_loss_follow_the_paper() {
        let t = texts(&["Math", "CS", "History"]);
        let b = Hierarchy::build("course_h", &course(), "c.course", &t, &[None, None, None])
            .expect("valid");
        let h = &b.hierarchy;
        let science = h.lca(b.codes[0], b.codes[1]);
        assert_eq!(h.label(science), Some("Science"));
        // 001 Sec. II: LM("Science") = 3 / (8 - 1).
        assert!((h.loss(science) - 3.0 / 7.0).abs() < 1e-12);
        assert_eq!(h.label(h.lca(b.codes[0], b.codes[2])), Some("*"));
        assert_eq!(h.loss(h.root()), 1.0);
        assert_eq!(h.loss(b.codes[0]), 0.0);
    }

    #[test]
    fn two_parents_and_cycles_are_refused() {
        let two = HierarchyDef::from_rows(&[&["Math", "Science"], &["Math", "Social"]]);
        let e = Hierarchy::build("h", &two, "t.c", &texts(&["Math"]), &[None])
            .err()
            .expect("two parents");
        assert!(e.to_string().contains("two parents"), "{e}");
        let cyc = HierarchyDef::from_rows(&[&["A", "B"], &["B", "A"]]);
        let e = Hierarchy::build("h", &cyc, "t.c", &texts(&["A"]), &[None])
            .err()
            .expect("cycle");
        assert!(e.to_string().contains("not a tree"), "{e}");
    }

    #[test]
    fn values_outside_the_hierarchy_are_listed() {
        let e = Hierarchy::build(
            "course_h",
            &course(),
            "courses.course",
            &texts(&["Math", "Art", "Art", "Music"]),
            &[None; 4],
        )
        .err()
        .expect("not leaves");
        let msg = e.to_string();
        assert!(
            msg.contains("courses.course") && msg.contains("'Art'") && msg.contains("'Music'"),
            "{msg}"
        );
        // An internal label is not a leaf either.
        assert!(
            Hierarchy::build("course_h", &course(), "c", &texts(&["Science"]), &[None]).is_err()
        );
    }

    #[test]
    fn null_is_its_own_leaf() {
        let t = vec![Some("Math".to_string()), None];
        let b = Hierarchy::build("course_h", &course(), "c", &t, &[None, None]).expect("valid");
        assert_eq!(b.hierarchy.label(b.codes[1]), None);
        assert_eq!(
            b.hierarchy.label(b.hierarchy.lca(b.codes[0], b.codes[1])),
            Some("*")
        );
        assert_eq!(b.hierarchy.total_leaves(), 9);
    }

    #[test]
    fn encode_codes_a_shard_as_the_whole_column_codes_it() {
        let def = HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: Some((0.0, 100.0)),
            pos: Pos::default(),
        };
        // The whole column: distinct values (with a NULL) build the hierarchy once.
        let whole = vec![Some("27".to_string()), None, Some("21".to_string())];
        let numbers = vec![Some(27.0), None, Some(21.0)];
        let built = Hierarchy::build("age", &def, "s.age", &whole, &numbers).expect("valid");
        let h = &built.hierarchy;
        // A shard repeats and reorders the values: each gets the whole's leaf code.
        let shard = vec![
            Some("21".to_string()),
            None,
            Some("21".to_string()),
            Some("27".to_string()),
        ];
        let codes = h.encode("s.age", &shard).expect("every value is a leaf");
        assert_eq!(
            codes,
            vec![
                built.codes[2],
                built.codes[1],
                built.codes[2],
                built.codes[0]
            ]
        );
        assert_eq!(h.label(codes[1]), None);
        // A band label or an unseen value is no leaf: refused, named.
        let err = h
            .encode(
                "s.age",
                &[Some("[20,24]".to_string()), Some("33".to_string())],
            )
            .expect_err("not leaves");
        assert!(err.to_string().contains("'33'"), "{err}");
    }

    #[test]
    fn bands_nest_and_check_range() {
        let def = HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: Some((0.0, 100.0)),
            pos: Pos::default(),
        };
        let t = texts(&["21", "24", "27"]);
        let n = vec![Some(21.0), Some(24.0), Some(27.0)];
        let b = Hierarchy::build("age", &def, "s.age", &t, &n).expect("valid");
        let h = &b.hierarchy;
        assert_eq!(h.label(h.lca(b.codes[0], b.codes[1])), Some("[20,24]"));
        assert_eq!(h.label(h.lca(b.codes[0], b.codes[2])), Some("[20,29]"));
        let bad = HierarchyDef::Bands {
            widths: vec![5.0, 7.0],
            range: None,
            pos: Pos::default(),
        };
        assert!(Hierarchy::build("age", &bad, "s.age", &t, &n).is_err());
        let out = Hierarchy::build("age", &def, "s.age", &texts(&["200"]), &[Some(200.0)])
            .err()
            .expect("outside");
        assert!(out.to_string().contains("'200'"));
    }

    #[test]
    fn date_parts() {
        let def = HierarchyDef::DateParts {
            parts: vec![DatePart::Month, DatePart::Year],
            pos: Pos::default(),
        };
        let t = texts(&["2021-03-04", "2021-03-28", "2021-07-01"]);
        let b = Hierarchy::build("d", &def, "o.d", &t, &[None; 3]).expect("valid");
        let h = &b.hierarchy;
        assert_eq!(h.label(h.lca(b.codes[0], b.codes[1])), Some("2021-03"));
        assert_eq!(h.label(h.lca(b.codes[0], b.codes[2])), Some("2021"));
        assert!(Hierarchy::build("d", &def, "o.d", &texts(&["soon"]), &[None]).is_err());
    }
}
