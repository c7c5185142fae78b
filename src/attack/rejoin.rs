//! The re-join attack on a vertical fragmentation (004; spec Sec. 3 "NOT guaranteed"): an
//! adversary who sees only the released fragments tries to pair each record's row in one
//! fragment with its row in the other, and the data owner, who knows which source row every
//! released row came from (the release's provenance, kept like a key map and never
//! written), scores what it recovers.
//!
//! Three attacks, each a rule that proposes links between rows of the two fragments:
//! - **by order**: row `i` of one with row `i` of the other (a fragment left in source
//!   order re-links every record this way);
//! - **by class frequencies**: a row with a class is linked to a row of the other fragment
//!   with the same class (under `delta`, of a group whose class set meets its own), chosen
//!   uniformly: a class held by fewer than k rows links its records with more than 1/k;
//! - **by quasi-identifiers** (the paper's adversary, Thm 4.1): one who knows a victim's
//!   every QI value finds the victim's group in each fragment and guesses among the joined
//!   pairs of those two groups that agree on the class: fewer than k such pairs single
//!   the record out past 1/k.
//! - **by shape**: a tree shape published in two fragments would join them; layout A
//!   publishes it in the anchor alone, and a single table has none.
//!
//! On entity trees (layout A) the anchor's groups are whole trees (QI labels and child
//! rows, read through the released FKs), as the adversary who knows a victim's child rows
//! finds them.
//!
//! Rows with the same content are interchangeable to anyone who sees the release, so a link
//! between row `i` and row `j` is correct with probability `T(a, b) / (m1(a) · m2(b))`,
//! where `a`, `b` are their contents, `m1`, `m2` how many rows carry them, and `T` how many
//! records have exactly those two rows' contents. A record is **recovered** when an attack
//! that can tell from the release how far to trust a link (by class, by QIs) links its two
//! rows with probability above 1/k, what k-anonymity of the whole record would allow. The
//! order attack cannot tell its good links from its bad, so it is held to what as many
//! random links get (a Poisson bound at 0.1%).
//!
//! Reads released Arrow tables only (cells rendered by [`render_value`]); shares nothing
//! with the algorithm.

use std::collections::HashMap;

use arrow::array::RecordBatch;

use crate::warehouse::{render_value, ReleaseTable};

/// A released fragment as the attack reads it.
pub struct Fragment<'a> {
    pub table: &'a str,
    pub qi_columns: &'a [String],
    /// Under `repair = 'delta'`: the table of its groups' class sets.
    pub class_sets: Option<&'a str>,
    /// An anchor fragment's child tables (layout A), parents before children: its groups
    /// are then whole trees, as an adversary who knows a victim's child rows sees them.
    pub children: &'a [Child<'a>],
}

/// A child table released with an anchor fragment.
pub struct Child<'a> {
    pub table: &'a str,
    /// The released table its FK to the parent names.
    pub parent: &'a str,
    pub qi_columns: &'a [String],
}

/// What one attack recovers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Linkage {
    /// Links the attack proposes (one per row of the first fragment it can pair).
    pub links: usize,
    /// Expected number of those links that join a record's own two rows.
    pub expected_correct: f64,
    /// What as many links drawn at random get; for the QI attack, what k-anonymity of
    /// the whole record allows (one in k for every record).
    pub chance: f64,
    /// Records the attack recovers beyond chance. By class and by QIs: records whose own
    /// two rows it links with a probability above 1/k that it can compute from the release
    /// alone (it knows which links to trust). By order, where it cannot tell its good links
    /// from its bad: how far its expected correct links pass random ones, when they pass
    /// them at the 0.1% level, else 0.
    pub beyond_chance: usize,
    /// The highest probability any of its links is correct.
    pub largest_probability: f64,
}

/// The re-join attack's findings on one fragmentation (the report's
/// `fragmentation.rejoin`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rejoin {
    /// Source rows released in both fragments: the records an attack could re-form.
    pub records: usize,
    pub k: usize,
    pub by_order: Linkage,
    pub by_class: Linkage,
    pub by_qi: Linkage,
    /// Why there is no shape attack, or what it found.
    pub by_shape: String,
    /// The attacks' `beyond_chance`, summed: 0 is the bar.
    pub beyond_chance: usize,
}

impl Rejoin {
    /// What a data owner should hear before publishing, when an attack recovers records
    /// beyond chance; None when none does.
    pub fn warning(&self) -> Option<String> {
        let named = [
            ("by row order", &self.by_order),
            ("by class frequencies", &self.by_class),
            ("by quasi-identifiers", &self.by_qi),
        ];
        let found: Vec<String> = named
            .iter()
            .filter(|(_, l)| l.beyond_chance > 0)
            .map(|(name, l)| format!("{} {name}", l.beyond_chance))
            .collect();
        if found.is_empty() {
            return None;
        }
        let mut text = format!(
            "the re-join attack links records of the two fragments beyond chance ({}; report: fragmentation.rejoin)",
            found.join(", ")
        );
        if self.by_class.beyond_chance > 0 {
            text += &format!(": a class held by fewer than k = {} rows of a fragment links its rows by itself; merge rare classes in the source, or use repair = 'delta', which publishes no class per row", self.k);
        }
        Some(text)
    }
}

/// One fragment as the adversary sees it, with each row's source row for the score.
struct Side {
    /// Each row's group: its QI labels.
    group: Vec<u32>,
    /// Each row's class (a code shared by both sides), None under `delta`.
    class: Vec<Option<u32>>,
    /// Each row's whole content.
    content: Vec<u32>,
    /// Under `delta`: each group's class set.
    sets: Option<Vec<Vec<u32>>>,
    source: Vec<u32>,
}

/// Runs the attacks on the two `fragments` among `tables` (their class column `class`),
/// `rows` holding each fragment's source row per released row. None when there are other
/// than two fragments or a table is missing.
pub fn assess(
    tables: &[ReleaseTable],
    fragments: &[Fragment<'_>],
    class: &str,
    rows: &[Vec<u32>],
    k: usize,
) -> Option<Rejoin> {
    let [f1, f2] = fragments else {
        return None;
    };
    let batch = |name: &str| tables.iter().find(|t| t.name == name).map(|t| &t.batch);
    let mut classes = Dict::default();
    let mut sides = Vec::new();
    for (f, source) in [f1, f2].into_iter().zip(rows) {
        let sets = match f.class_sets {
            Some(name) => Some(batch(name)?),
            None => None,
        };
        let mut side = side(
            batch(f.table)?,
            f.qi_columns,
            class,
            sets,
            source,
            &mut classes,
        )?;
        if !f.children.is_empty() {
            side.group = tree_groups(tables, f)?;
        }
        sides.push(side);
    }
    let [one, two] = <[Side; 2]>::try_from(sides).ok()?;
    Some(attack(&one, &two, k, shape(f1, f2)))
}

/// The shape attack: a tree shape published in two fragments would be a join key (S4).
/// Layout A publishes it in the anchor alone, so there is nothing to align it with.
fn shape(f1: &Fragment<'_>, f2: &Fragment<'_>) -> String {
    match (f1.children.is_empty(), f2.children.is_empty()) {
        (true, true) => "none: a single table releases no tree shape".to_string(),
        (false, true) => format!("none: only {} publishes tree shape (child rows), {} has none to align it with", f1.table, f2.table),
        (true, false) => format!("none: only {} publishes tree shape (child rows), {} has none to align it with", f2.table, f1.table),
        (false, false) => format!("both {} and {} publish tree shape: an adversary can join them on it; fragments of entity trees must keep the child tables in one fragment", f1.table, f2.table),
    }
}

/// Each row of an anchor fragment's group: the form of its whole released tree (its QI
/// labels and the multiset of its child rows' forms, children read through their FKs),
/// interned. None when a table or column is missing.
fn tree_groups(tables: &[ReleaseTable], f: &Fragment<'_>) -> Option<Vec<u32>> {
    let find = |name: &str| tables.iter().find(|t| t.name == name);
    let mut forms = Dict::default();
    // Per released child table: its parent, the parent's columns its FK names, and the
    // forms of its rows under each parent key.
    let mut below: Vec<(&str, Vec<String>, Below)> = Vec::new();
    for child in f.children.iter().rev() {
        let table = find(child.table)?;
        let fk = table
            .foreign_keys
            .iter()
            .find(|fk| fk.ref_table == child.parent)?;
        let fk_at = indexes(&table.batch, &fk.columns)?;
        let own = rows_forms(table, child.table, child.qi_columns, &below, &mut forms)?;
        let mut under: Below = HashMap::new();
        for (row, form) in own.into_iter().enumerate() {
            under
                .entry(tuple(&table.batch, &fk_at, row))
                .or_default()
                .push(form);
        }
        below.push((child.parent, fk.ref_columns.clone(), under));
    }
    let anchor = find(f.table)?;
    rows_forms(anchor, f.table, f.qi_columns, &below, &mut forms)
}

/// A table's child forms by parent key.
type Below = HashMap<Vec<Option<String>>, Vec<u32>>;

/// The form of every row of `table`: its QI labels and the sorted forms of its children in
/// `below` (those whose parent it is).
fn rows_forms(
    table: &ReleaseTable,
    name: &str,
    qi_columns: &[String],
    below: &[(&str, Vec<String>, Below)],
    forms: &mut Dict,
) -> Option<Vec<u32>> {
    let batch = &table.batch;
    let qi = indexes(batch, qi_columns)?;
    let mine: Vec<(Vec<usize>, &Below)> = below
        .iter()
        .filter(|(parent, _, _)| *parent == name)
        .map(|(_, key, under)| Some((indexes(batch, key)?, under)))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut children: Vec<u32> = Vec::new();
        for (key, under) in &mine {
            if let Some(found) = under.get(&tuple(batch, key, row)) {
                children.extend(found);
            }
        }
        children.sort_unstable();
        let mut form = vec![Some(name.to_string())];
        form.extend(tuple(batch, &qi, row));
        form.extend(children.iter().map(|c| Some(c.to_string())));
        out.push(forms.code(form));
    }
    Some(out)
}

/// Interns rendered tuples as codes.
#[derive(Default)]
struct Dict(HashMap<Vec<Option<String>>, u32>);

impl Dict {
    fn code(&mut self, key: Vec<Option<String>>) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(key).or_insert(next)
    }
}

/// The rendered cells of `columns` at `row`.
fn tuple(batch: &RecordBatch, columns: &[usize], row: usize) -> Vec<Option<String>> {
    columns
        .iter()
        .map(|&c| render_value(batch.column(c).as_ref(), row))
        .collect()
}

/// Column indexes of `names` in `batch`; None when one is missing.
fn indexes(batch: &RecordBatch, names: &[String]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|n| batch.schema().index_of(n).ok())
        .collect()
}

/// A fragment's rows as groups, classes and contents.
fn side(
    batch: &RecordBatch,
    qi_columns: &[String],
    class: &str,
    sets: Option<&RecordBatch>,
    source: &[u32],
    classes: &mut Dict,
) -> Option<Side> {
    let qi = indexes(batch, qi_columns)?;
    let class_at = batch.schema().index_of(class).ok();
    let all: Vec<usize> = (0..batch.num_columns()).collect();
    let (mut groups, mut contents) = (Dict::default(), Dict::default());
    let mut out = Side {
        group: Vec::with_capacity(batch.num_rows()),
        class: Vec::with_capacity(batch.num_rows()),
        content: Vec::with_capacity(batch.num_rows()),
        sets: None,
        source: source.to_vec(),
    };
    for row in 0..batch.num_rows() {
        out.group.push(groups.code(tuple(batch, &qi, row)));
        out.class
            .push(class_at.map(|c| classes.code(tuple(batch, &[c], row))));
        out.content.push(contents.code(tuple(batch, &all, row)));
    }
    if let Some(table) = sets {
        let qi = indexes(table, qi_columns)?;
        let at = table.schema().index_of(class).ok()?;
        let mut per_group = vec![Vec::new(); groups.0.len()];
        for row in 0..table.num_rows() {
            // A class set of a group no row carries is nothing to link.
            if let Some(&g) = groups.0.get(&tuple(table, &qi, row)) {
                per_group[g as usize].push(classes.code(tuple(table, &[at], row)));
            }
        }
        per_group.iter_mut().for_each(|s| {
            s.sort_unstable();
            s.dedup();
        });
        out.sets = Some(per_group);
    }
    (out.source.len() == batch.num_rows()).then_some(out)
}

/// The three attacks on two sides.
fn attack(one: &Side, two: &Side, k: usize, by_shape: String) -> Rejoin {
    let truth = Truth::of(one, two);
    let by_order = by_order(one, two, &truth);
    let by_class = by_class(one, two, &truth, k);
    let by_qi = by_qi(one, two, &truth, k);
    let beyond = by_order.beyond_chance + by_class.beyond_chance + by_qi.beyond_chance;
    Rejoin {
        records: truth.records.len(),
        k,
        by_order,
        by_class,
        by_qi,
        by_shape,
        beyond_chance: beyond,
    }
}

/// What the score needs of the source: every record released in both fragments, as its
/// row in each, and how many records and rows share each pair of contents.
struct Truth {
    /// (row in the first fragment, row in the second).
    records: Vec<(usize, usize)>,
    pairs: HashMap<(u32, u32), usize>,
    m1: HashMap<u32, usize>,
    m2: HashMap<u32, usize>,
}

impl Truth {
    fn of(one: &Side, two: &Side) -> Truth {
        let at: HashMap<u32, usize> = two
            .source
            .iter()
            .enumerate()
            .map(|(j, &s)| (s, j))
            .collect();
        let records: Vec<(usize, usize)> = one
            .source
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, *at.get(s)?)))
            .collect();
        let mut pairs = HashMap::new();
        for &(i, j) in &records {
            *pairs.entry((one.content[i], two.content[j])).or_insert(0) += 1;
        }
        Truth {
            records,
            pairs,
            m1: counts(&one.content),
            m2: counts(&two.content),
        }
    }

    /// The probability that linking row `i` of the first fragment with row `j` of the
    /// second joins one record's own rows.
    fn correct(&self, one: &Side, two: &Side, i: usize, j: usize) -> f64 {
        let (a, b) = (one.content[i], two.content[j]);
        let t = self.pairs.get(&(a, b)).copied().unwrap_or(0);
        let m = self.m1.get(&a).copied().unwrap_or(1) * self.m2.get(&b).copied().unwrap_or(1);
        t as f64 / m.max(1) as f64
    }
}

fn counts(codes: &[u32]) -> HashMap<u32, usize> {
    let mut out = HashMap::new();
    for &c in codes {
        *out.entry(c).or_insert(0) += 1;
    }
    out
}

/// Row `i` with row `i`.
fn by_order(one: &Side, two: &Side, truth: &Truth) -> Linkage {
    let links = one.source.len().min(two.source.len());
    let mut out = empty(links);
    for i in 0..links {
        let p = truth.correct(one, two, i, i);
        out.expected_correct += p;
        out.largest_probability = out.largest_probability.max(p);
    }
    let all = (one.source.len() * two.source.len()).max(1) as f64;
    out.chance = links as f64 * truth.records.len() as f64 / all;
    if out.expected_correct > poisson_bound(out.chance) {
        out.beyond_chance = ((out.expected_correct - out.chance).round() as usize).max(1);
    }
    out
}

/// Each row of the first fragment with a uniformly chosen row of the second that agrees
/// with it on the class (or whose group's class set meets its group's): a record is linked
/// with probability one over that many rows when its own row is among them.
fn by_class(one: &Side, two: &Side, truth: &Truth, k: usize) -> Linkage {
    let mut per_class: HashMap<u32, usize> = HashMap::new();
    for c in two.class.iter().flatten() {
        *per_class.entry(*c).or_insert(0) += 1;
    }
    let group_sizes = counts(&two.group);
    let mut meeting: HashMap<u32, usize> = HashMap::new();
    let mut out = empty(one.source.len());
    for &(i, j) in &truth.records {
        let candidates = match (one.class[i], two.class[j]) {
            (Some(a), Some(b)) if a == b => per_class.get(&a).copied().unwrap_or(0),
            (Some(_), Some(_)) => 0,
            _ => {
                let g = one.group[i];
                let rows = *meeting
                    .entry(g)
                    .or_insert_with(|| rows_meeting(one, two, g, &group_sizes));
                if sets_meet(one, two, g, two.group[j]) {
                    rows
                } else {
                    0
                }
            }
        };
        let p = if candidates == 0 {
            0.0
        } else {
            1.0 / candidates as f64
        };
        record(&mut out, p, k);
    }
    out.chance = truth.records.len() as f64 / two.source.len().max(1) as f64;
    out
}

/// Rows of the second fragment whose group's class set meets group `g`'s of the first.
fn rows_meeting(one: &Side, two: &Side, g: u32, sizes: &HashMap<u32, usize>) -> usize {
    sizes
        .iter()
        .filter(|(&h, _)| sets_meet(one, two, g, h))
        .map(|(_, &n)| n)
        .sum()
}

/// Whether group `g` of the first fragment and group `h` of the second share a class.
fn sets_meet(one: &Side, two: &Side, g: u32, h: u32) -> bool {
    let (Some(a), Some(b)) = (&one.sets, &two.sets) else {
        return false;
    };
    let (Some(a), Some(b)) = (a.get(g as usize), b.get(h as usize)) else {
        return false;
    };
    a.iter().any(|c| b.binary_search(c).is_ok())
}

/// The paper's adversary: a victim's two groups known from its QI values, a guess among
/// the pairs of their rows that agree on the class (Thm 4.1's J).
fn by_qi(one: &Side, two: &Side, truth: &Truth, k: usize) -> Linkage {
    let freq = |side: &Side| {
        let mut f: HashMap<u32, HashMap<Option<u32>, usize>> = HashMap::new();
        for (g, c) in side.group.iter().zip(&side.class) {
            *f.entry(*g).or_default().entry(*c).or_insert(0) += 1;
        }
        f
    };
    let (f1, f2) = (freq(one), freq(two));
    let mut joined: HashMap<(u32, u32), usize> = HashMap::new();
    let mut out = empty(truth.records.len());
    for &(i, j) in &truth.records {
        let (x, y) = (one.group[i], two.group[j]);
        let size = *joined.entry((x, y)).or_insert_with(|| {
            let (Some(fx), Some(fy)) = (f1.get(&x), f2.get(&y)) else {
                return 0;
            };
            if one.sets.is_some() {
                let rows = |f: &HashMap<Option<u32>, usize>| f.values().sum::<usize>();
                return if sets_meet(one, two, x, y) {
                    rows(fx) * rows(fy)
                } else {
                    0
                };
            }
            fx.iter().filter_map(|(c, n)| Some(n * fy.get(c)?)).sum()
        });
        let agree = one.class[i] == two.class[j];
        let p = if agree && size > 0 {
            1.0 / size as f64
        } else {
            0.0
        };
        record(&mut out, p, k);
    }
    out.chance = truth.records.len() as f64 / k.max(1) as f64;
    out
}

fn empty(links: usize) -> Linkage {
    Linkage {
        links,
        expected_correct: 0.0,
        chance: 0.0,
        beyond_chance: 0,
        largest_probability: 0.0,
    }
}

/// Counts one record's link, which the adversary knows is correct with probability `p`.
fn record(out: &mut Linkage, p: f64, k: usize) {
    out.expected_correct += p;
    out.largest_probability = out.largest_probability.max(p);
    // Exactly 1/k is what k-anonymity allows; a hair above it from rounding is not a finding.
    if p * k as f64 > 1.0 + 1e-9 {
        out.beyond_chance += 1;
    }
}

/// The smallest count a Poisson variable of mean `mean` exceeds with probability below
/// 0.1%: random links get more correct ones than this one time in a thousand.
fn poisson_bound(mean: f64) -> f64 {
    let (mut term, mut cdf, mut n) = ((-mean).exp(), 0.0, 0u32);
    loop {
        cdf += term;
        if cdf >= 0.999 || n > 10_000 {
            return f64::from(n);
        }
        n += 1;
        term *= mean / f64::from(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A side with one QI group per `groups` entry, the class per row, and content = group
    /// and class.
    fn side(groups: &[u32], classes: &[u32], source: &[u32]) -> Side {
        let content = groups
            .iter()
            .zip(classes)
            .map(|(g, c)| g * 100 + c)
            .collect();
        Side {
            group: groups.to_vec(),
            class: classes.iter().map(|&c| Some(c)).collect(),
            content,
            sets: None,
            source: source.to_vec(),
        }
    }

    #[test]
    fn fragments_whose_rows_are_all_distinct_and_in_source_order_give_every_record_away() {
        let n = 20u32;
        let rows: Vec<u32> = (0..n).collect();
        let one = side(&rows, &vec![0; n as usize], &rows);
        let two = side(&rows, &vec![0; n as usize], &rows);
        let r = attack(&one, &two, 5, String::new());
        assert_eq!(r.records, 20);
        assert!((r.by_order.expected_correct - 20.0).abs() < 1e-9);
        // 20 correct links where random ones get 1: 19 beyond chance.
        assert_eq!(r.by_order.beyond_chance, 19);
        assert!(r.beyond_chance >= 19);
    }

    #[test]
    fn a_join_of_two_k_groups_on_one_class_recovers_nothing_past_one_in_k() {
        // Two groups of 5 in each fragment, one class: every joined pair has 25 rows.
        let g: Vec<u32> = (0..10).map(|i| i / 5).collect();
        let one = side(&g, &[0; 10], &(0..10).collect::<Vec<_>>());
        // The second fragment holds the same records in reverse.
        let src2: Vec<u32> = (0..10).rev().collect();
        let two = side(&g, &[0; 10], &src2);
        let r = attack(&one, &two, 5, String::new());
        assert_eq!(r.by_qi.beyond_chance, 0);
        assert!((r.by_qi.largest_probability - 1.0 / 25.0).abs() < 1e-12);
        assert_eq!(r.by_class.beyond_chance, 0);
        assert_eq!(r.beyond_chance, 0);
    }

    #[test]
    fn a_class_pair_joining_in_fewer_than_k_rows_is_recovered_by_the_qi_attack() {
        // Group 0 holds the only row of class 1 in each fragment: its join is one pair.
        let g = [0, 0, 0, 1, 1, 1];
        let c1 = [1, 0, 0, 0, 0, 0];
        let one = side(&g, &c1, &[0, 1, 2, 3, 4, 5]);
        let two = side(&g, &c1, &[0, 1, 2, 3, 4, 5]);
        let r = attack(&one, &two, 3, String::new());
        // Record 0: J = 1·1 + 2·2 = 5 pairs, so 1/5 < 1/3; but its class is unique, so the
        // class attack links it for certain.
        assert_eq!(r.by_qi.beyond_chance, 0);
        assert_eq!(r.by_class.beyond_chance, 1);
        assert!((r.by_class.largest_probability - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_record_whose_class_differs_between_fragments_is_never_linked_by_class() {
        let one = side(&[0, 0], &[0, 1], &[0, 1]);
        let two = side(&[0, 0], &[1, 0], &[0, 1]);
        let r = attack(&one, &two, 2, String::new());
        assert_eq!(r.by_class.expected_correct, 0.0);
        assert_eq!(r.by_qi.expected_correct, 0.0);
    }

    #[test]
    fn class_sets_that_meet_join_whole_groups() {
        let mut one = side(&[0, 0, 1, 1], &[0; 4], &[0, 1, 2, 3]);
        let mut two = side(&[0, 0, 1, 1], &[0; 4], &[0, 1, 2, 3]);
        for s in [&mut one, &mut two] {
            s.class = vec![None; 4];
            s.sets = Some(vec![vec![0], vec![1]]);
        }
        let r = attack(&one, &two, 2, String::new());
        // Group 0 meets group 0 only: 2·2 pairs; by class 2 candidate rows.
        assert!((r.by_qi.largest_probability - 0.25).abs() < 1e-12);
        assert!((r.by_class.largest_probability - 0.5).abs() < 1e-12);
        assert_eq!(r.by_class.beyond_chance, 0);
    }

    #[test]
    fn the_poisson_bound_is_past_the_mean_and_grows_with_it() {
        assert_eq!(poisson_bound(0.0), 0.0);
        let (one, ten) = (poisson_bound(1.0), poisson_bound(10.0));
        assert!((4.0..=6.0).contains(&one), "{one}");
        assert!(ten > one && (19.0..=22.0).contains(&ten), "{ten}");
    }
}
