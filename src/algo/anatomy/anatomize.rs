//! Anatomize (000 Alg. 6-8, as the spec's Sec. 2.4 resolves them): entity trees grouped ℓ at a
//! time, each group's members aligned on one slot tree (decision D9) so that every slot holds
//! ℓ vertices of one table with distinct sensitive values (decision D5), under the
//! (p,m)-privacy rules' budgets ([`super::thresholds`]). What a member cannot align is
//! suppressed with its subtree; a tree no group takes is suppressed whole.
//!
//! - Partitions (D7): trees sorted by (vertex count, entity order), cut into `partitions`
//!   contiguous parts of sizes differing by at most one (clamped so none is smaller than ℓ),
//!   then the leftovers (LP) once.
//! - A group (lines 11-21): the first tree of the part is the seed, admitted vertex by vertex
//!   under the rules (D4); then ℓ − 1 times the candidate whose merge loses the fewest vertices
//!   joins (COST, D6; ties to the earliest); a group no candidate can join is abandoned (D8).
//! - Rule budgets use the group's final size ℓ (D3): t-t counts members holding a value m
//!   times or more, v-v the value's occurrences.

use crate::algo::kernel::annotate::tree_rows;
use crate::algo::output::{tt_budget, vv_budget, Anatomy, Group, Rule, Slot};
use crate::forest::Forest;

pub use crate::plan::Variant;

/// What anatomize is asked for.
#[derive(Debug, Clone)]
pub struct Config {
    pub l: usize,
    pub rules: Vec<Rule>,
    pub partitions: usize,
    pub variant: Variant,
}

/// A group being built: its slots and the rules' counters.
#[derive(Debug, Clone)]
struct Building {
    slots: Vec<Building1>,
    /// Members so far.
    members: usize,
    /// t-t: per member, per rule, the rule value's occurrences in the member's kept vertices.
    counts: Vec<Vec<u32>>,
    /// t-t: per rule, members holding it m times or more; v-v: per rule, occurrences.
    used: Vec<u64>,
    /// What a tentative merge changed, so it can be undone: a merge is tried in place for
    /// every candidate (cloning the group per candidate cost more than the merges).
    trail: Vec<Undo>,
    /// Which of a member's child rows are taken, per level of `merge_vertices`.
    matched: Vec<bool>,
    /// Live slots.
    alive: usize,
}

/// One change of a tentative merge.
#[derive(Debug, Clone)]
enum Undo {
    /// A row (and its values) pushed onto the slot.
    Pushed(usize),
    /// The slot suppressed.
    Killed(usize),
    /// The member count, rule counters and earlier members' counts before the merge.
    Members(usize, Vec<u64>, Vec<Vec<u32>>),
}

#[derive(Debug, Clone)]
struct Building1 {
    table: usize,
    parent: Option<usize>,
    children: Vec<usize>,
    rows: Vec<u32>,
    /// Per sensitive column of the table, the values the slot holds.
    values: Vec<Vec<u32>>,
    alive: bool,
}

/// The rules as the algorithm consults them.
struct Rules<'a> {
    forest: &'a Forest,
    rules: &'a [Rule],
    /// `on[table][column][code]`: the rules on that value.
    on: Vec<Vec<Vec<Vec<usize>>>>,
    /// Per rule, its budget in the group (see [`Building::used`]).
    budget: Vec<u64>,
    variant: Variant,
}

impl Rules<'_> {
    /// The rules a vertex's sensitive cells name.
    fn of(&self, table: usize, row: u32) -> impl Iterator<Item = usize> + '_ {
        let t = &self.forest.tables[table];
        t.sensitive
            .iter()
            .zip(&self.on[table])
            .flat_map(move |(s, on)| on[s.codes[row as usize] as usize].iter().copied())
    }

    /// Whether member `member` may keep vertex (table, row); if so, counts it.
    fn admit(&self, g: &mut Building, member: usize, table: usize, row: u32) -> bool {
        let ok = self.of(table, row).all(|r| match self.variant {
            Variant::TreeTree => {
                g.counts[member][r] + 1 != self.rules[r].m || g.used[r] < self.budget[r]
            }
            Variant::VertexVertex => g.used[r] < self.budget[r],
        });
        if ok {
            for r in self.of(table, row) {
                match self.variant {
                    Variant::TreeTree => {
                        g.counts[member][r] += 1;
                        if g.counts[member][r] == self.rules[r].m {
                            g.used[r] += 1;
                        }
                    }
                    Variant::VertexVertex => g.used[r] += 1,
                }
            }
        }
        ok
    }

    /// Uncounts member `member`'s vertex (table, row), suppressed from the group.
    fn release(&self, g: &mut Building, member: usize, table: usize, row: u32) {
        for r in self.of(table, row) {
            match self.variant {
                Variant::TreeTree => {
                    if g.counts[member][r] == self.rules[r].m {
                        g.used[r] -= 1;
                    }
                    g.counts[member][r] -= 1;
                }
                Variant::VertexVertex => g.used[r] -= 1,
            }
        }
    }
}

/// Groups the forest's entities (Algorithm 6).
pub fn anatomize(forest: &Forest, config: &Config) -> Anatomy {
    anatomize_pruned(forest, config, true)
}

/// [`anatomize`], skipping a candidate whose COST cannot beat the best one found when
/// `prune` (the spec's Sec. 2.5 bound; off only to test that it changes nothing).
fn anatomize_pruned(forest: &Forest, config: &Config, prune: bool) -> Anatomy {
    let l = config.l.max(1);
    let n = forest.entities();
    let rules = rules_of(forest, config, l);
    // Lines 3-4 (D7).
    // Rows per table of each entity's tree, and their sum.
    let tables = forest.tables.len();
    let rows = tree_rows(forest);
    let profiles: Vec<&[u32]> = rows.chunks(tables.max(1)).collect();
    let sizes: Vec<usize> = profiles
        .iter()
        .map(|p| p.iter().map(|&r| r as usize).sum())
        .collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&e| (sizes[e as usize], e));
    let partitions = partition(&order, l, config.partitions);
    let parts = partitions.len();
    let trees = Trees {
        profiles: &profiles,
        sizes: &sizes,
    };
    let mut groups = Vec::new();
    let mut suppressed = Vec::new();
    let mut leftover: Vec<u32> = Vec::new();
    // Line 5: each partition, then the leftovers once.
    for next in partitions
        .into_iter()
        .map(Some)
        .chain(std::iter::once(None))
    {
        let is_lp = next.is_none();
        let mut part = next.unwrap_or_else(|| {
            // In partition order.
            let mut lp = std::mem::take(&mut leftover);
            lp.sort_by_key(|&e| (sizes[e as usize], e));
            lp
        });
        while !part.is_empty() {
            // Lines 8-10.
            if part.len() < l {
                if is_lp {
                    suppressed.append(&mut part);
                } else {
                    leftover.append(&mut part);
                }
                break;
            }
            // Lines 11-16: the seed.
            let seed = part.remove(0);
            let Some(building) = admit_seed(forest, &rules, seed, l) else {
                suppressed.push(seed);
                continue;
            };
            let grow = Grow {
                forest,
                rules: &rules,
                trees: &trees,
                l,
                prune,
            };
            match grow.complete(building, seed, &mut part) {
                Some(group) => groups.push(group),
                None if is_lp => suppressed.push(seed),
                None => leftover.push(seed),
            }
        }
    }
    suppressed.sort_unstable();
    Anatomy {
        groups,
        suppressed,
        partitions: parts,
    }
}

/// The rules as anatomize applies them: each rule's budget at the group size ℓ (D3), and
/// the rules on each (table, column, value).
fn rules_of<'a>(forest: &'a Forest, config: &'a Config, l: usize) -> Rules<'a> {
    let mut on: Vec<Vec<Vec<Vec<usize>>>> = forest
        .tables
        .iter()
        .map(|t| {
            t.sensitive
                .iter()
                .map(|s| vec![Vec::new(); s.labels.len()])
                .collect()
        })
        .collect();
    for (i, r) in config.rules.iter().enumerate() {
        if let Some(list) = on
            .get_mut(r.table)
            .and_then(|t| t.get_mut(r.column))
            .and_then(|c| c.get_mut(r.code as usize))
        {
            list.push(i);
        }
    }
    let budget = config
        .rules
        .iter()
        .map(|r| match config.variant {
            Variant::TreeTree => tt_budget(r.p, l as u32) as u64,
            Variant::VertexVertex => vv_budget(r.p, r.m, l as u32).unwrap_or(u64::MAX),
        })
        .collect();
    Rules {
        forest,
        rules: &config.rules,
        on,
        budget,
        variant: config.variant,
    }
}

/// Lines 3-4 (D7): the entities in `order` cut into `wanted` contiguous parts of sizes
/// differing by at most one, clamped so none is smaller than ℓ (one part at least).
fn partition(order: &[u32], l: usize, wanted: usize) -> Vec<Vec<u32>> {
    let n = order.len();
    let parts = wanted.max(1).min((n / l).max(1));
    let mut partitions: Vec<Vec<u32>> = Vec::with_capacity(parts + 1);
    let (base, extra) = (n / parts, n % parts);
    let mut at = 0;
    for i in 0..parts {
        let size = base + usize::from(i < extra);
        partitions.push(order[at..at + size].to_vec());
        at += size;
    }
    partitions
}

/// Every entity tree's rows per table, and its vertex count.
struct Trees<'a> {
    profiles: &'a [&'a [u32]],
    sizes: &'a [usize],
}

/// What growing a group from its seed reads.
struct Grow<'a> {
    forest: &'a Forest,
    rules: &'a Rules<'a>,
    trees: &'a Trees<'a>,
    l: usize,
    prune: bool,
}

impl Grow<'_> {
    /// Lines 17-20: ℓ − 1 times the candidate of `part` whose merge loses the fewest vertices
    /// joins the seed's group. When none can (D8), the members merged so far go back where
    /// they were in `part`, and there is no group.
    fn complete(&self, mut building: Building, seed: u32, part: &mut Vec<u32>) -> Option<Group> {
        let (forest, rules) = (self.forest, self.rules);
        let mut members = vec![seed];
        let mut taken: Vec<(usize, u32)> = Vec::new();
        for _ in 1..self.l {
            let slots = slot_counts(&building, forest.tables.len());
            // A merge keeps at most as many slots of a table as both sides have, so its
            // COST is at least this bound. Candidates are tried by rising bound, so the
            // search stops at the first bound above the best COST found; the least
            // (COST, position) wins either way, so the order changes nothing.
            let mut order: Vec<(u64, usize)> = part
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let bound = if self.prune {
                        cost_bound(&slots, self.trees.profiles[c as usize], building.members)
                    } else {
                        0
                    };
                    (bound, i)
                })
                .collect();
            order.sort_unstable();
            let sizes = self.trees.sizes;
            let Some((_, i)) = search(forest, rules, &building, part, sizes, &order) else {
                for (i, c) in taken.into_iter().rev() {
                    part.insert(i, c);
                }
                return None;
            };
            // Line 19: the chosen merge, done again and kept.
            let c = part[i];
            merge(forest, rules, &mut building, c, sizes[c as usize])
                .expect("the merge succeeded a moment ago on the same group");
            building.trail.clear();
            members.push(part[i]);
            taken.push((i, part.remove(i)));
        }
        Some(finish(building, members))
    }
}

/// Lines 18-19's argmin: the least (COST, position) over the candidates `order` lists by
/// rising COST bound. Two threads take alternate candidates, each merging into its own copy
/// of the group and stopping at the first bound above the best COST either has found (a
/// shared atomic); the least pair is the same whatever the threads see when.
fn search(
    forest: &Forest,
    rules: &Rules,
    building: &Building,
    part: &[u32],
    sizes: &[usize],
    order: &[(u64, usize)],
) -> Option<(u64, usize)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    // (COST, position) packed so that one atomic min keeps both.
    let shared = AtomicU64::new(u64::MAX);
    let pack = |cost: u64, i: usize| (cost.min(u32::MAX as u64) << 32) | i as u64;
    let stream = |first: usize, step: usize| {
        let mut g = building.clone();
        let mut mine: Option<(u64, usize)> = None;
        for &(bound, i) in order.iter().skip(first).step_by(step) {
            let best = shared.load(Ordering::Relaxed);
            if best != u64::MAX {
                let (cost, at) = (best >> 32, (best & u32::MAX as u64) as usize);
                if bound > cost {
                    break;
                }
                if bound == cost && i > at {
                    continue;
                }
            }
            let c = part[i];
            let cost = merge(forest, rules, &mut g, c, sizes[c as usize]);
            undo(&mut g);
            if let Some(cost) = cost {
                if mine.is_none_or(|m| (cost, i) < m) {
                    mine = Some((cost, i));
                    shared.fetch_min(pack(cost, i), Ordering::Relaxed);
                }
            }
        }
        mine
    };
    // A few candidates are not worth a second thread.
    let (a, b) = if order.len() < 64 || rayon::current_num_threads() < 2 {
        (stream(0, 1), None)
    } else {
        rayon::join(|| stream(0, 2), || stream(1, 2))
    };
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Live slots per table.
fn slot_counts(g: &Building, tables: usize) -> Vec<u32> {
    let mut out = vec![0; tables];
    for s in g.slots.iter().filter(|s| s.alive) {
        out[s.table] += 1;
    }
    out
}

/// The spec's Sec. 2.5 lower bound of a merge's COST: with r the most slots the merge can
/// keep (per table, the fewer of the group's slots and the candidate's vertices),
/// j·(|T^A| − r) + (|C| − r).
fn cost_bound(slots: &[u32], candidate: &[u32], members: usize) -> u64 {
    let kept: u64 = slots
        .iter()
        .zip(candidate)
        .map(|(&a, &b)| a.min(b) as u64)
        .sum();
    let before: u64 = slots.iter().map(|&a| a as u64).sum();
    let size: u64 = candidate.iter().map(|&b| b as u64).sum();
    members as u64 * (before - kept) + (size - kept)
}

/// Lines 12-16 (D4): the seed's slot tree, every vertex admitted under the rules, a vertex
/// that would break one suppressed with its subtree; `None` when the root would.
fn admit_seed(forest: &Forest, rules: &Rules, seed: u32, l: usize) -> Option<Building> {
    let mut g = Building {
        slots: Vec::new(),
        members: 1,
        counts: vec![vec![0; rules.rules.len()]; l],
        used: vec![0; rules.rules.len()],
        trail: Vec::new(),
        matched: Vec::new(),
        alive: 0,
    };
    fn add(
        forest: &Forest,
        rules: &Rules,
        g: &mut Building,
        table: usize,
        row: u32,
        parent: Option<usize>,
    ) -> bool {
        if !rules.admit(g, 0, table, row) {
            return false;
        }
        let t = &forest.tables[table];
        let index = g.slots.len();
        g.alive += 1;
        g.slots.push(Building1 {
            table,
            parent,
            children: Vec::new(),
            rows: vec![row],
            values: t
                .sensitive
                .iter()
                .map(|s| vec![s.codes[row as usize]])
                .collect(),
            alive: true,
        });
        if let Some(p) = parent {
            g.slots[p].children.push(index);
        }
        for c in &t.children {
            for &k in c.of(row) {
                add(forest, rules, g, c.table, k, Some(index));
            }
        }
        true
    }
    add(forest, rules, &mut g, 0, seed, None).then_some(g)
}

/// Algorithm 7: tree `candidate` merged into `g` as its next member, every change on the
/// trail (see [`undo`]), and the COST of the merge (D6: the vertices it loses, the group's
/// weighted by its members), or `None` when the root cannot be matched.
fn merge(
    forest: &Forest,
    rules: &Rules,
    g: &mut Building,
    candidate: u32,
    candidate_size: usize,
) -> Option<u64> {
    let before = g.alive;
    let member = g.members;
    g.trail.push(Undo::Members(
        member,
        g.used.clone(),
        g.counts[..member].to_vec(),
    ));
    if !try_match(forest, rules, g, member, 0, 0, candidate) {
        return None;
    }
    g.members += 1;
    merge_vertices(forest, rules, g, member, 0, candidate);
    let after = g.alive;
    Some((member * (before - after) + (candidate_size - after)) as u64)
}

/// Takes back a tentative merge: the trail read backwards.
fn undo(g: &mut Building) {
    while let Some(change) = g.trail.pop() {
        match change {
            Undo::Pushed(s) => {
                let slot = &mut g.slots[s];
                slot.rows.pop();
                for held in &mut slot.values {
                    held.pop();
                }
            }
            Undo::Killed(s) => {
                g.slots[s].alive = true;
                g.alive += 1;
            }
            Undo::Members(members, used, counts) => {
                g.members = members;
                g.used = used;
                for (m, c) in counts.into_iter().enumerate() {
                    g.counts[m] = c;
                }
                for c in g.counts.iter_mut().skip(members) {
                    c.iter_mut().for_each(|n| *n = 0);
                }
            }
        }
    }
}

/// Lines 4-7 of Algorithm 8 for one pair: the SA test (every sensitive value new to the slot,
/// D5) and the rule test; on success the vertex joins the slot.
fn try_match(
    forest: &Forest,
    rules: &Rules,
    g: &mut Building,
    member: usize,
    slot: usize,
    table: usize,
    row: u32,
) -> bool {
    let t = &forest.tables[table];
    let fresh = t
        .sensitive
        .iter()
        .zip(&g.slots[slot].values)
        .all(|(s, held)| !held.contains(&s.codes[row as usize]));
    if !fresh || !rules.admit(g, member, table, row) {
        return false;
    }
    let s = &mut g.slots[slot];
    s.rows.push(row);
    for (held, col) in s.values.iter_mut().zip(&t.sensitive) {
        held.push(col.codes[row as usize]);
    }
    g.trail.push(Undo::Pushed(slot));
    true
}

/// Algorithm 8 below a matched pair (slot, row): each live child slot, in creation order,
/// takes the first unmatched child row of its table that passes; a slot nobody fills is
/// suppressed with its subtree (every member loses those vertices).
fn merge_vertices(
    forest: &Forest,
    rules: &Rules,
    g: &mut Building,
    member: usize,
    slot: usize,
    row: u32,
) {
    let table = g.slots[slot].table;
    let groups = &forest.tables[table].children;
    // The member's child rows in table order, then row order; matched ones are taken. The
    // flags live on one stack shared down the recursion (a vector per call cost more).
    let base = g.matched.len();
    let total: usize = groups.iter().map(|c| c.of(row).len()).sum();
    g.matched.extend(std::iter::repeat_n(false, total));
    // Group gi's flags start after the rows of the groups before it.
    let offset = |gi: usize| base + groups[..gi].iter().map(|c| c.of(row).len()).sum::<usize>();
    for j in 0..g.slots[slot].children.len() {
        let s = g.slots[slot].children[j];
        if !g.slots[s].alive {
            continue;
        }
        let t = g.slots[s].table;
        let mut done = false;
        if let Some(gi) = groups.iter().position(|c| c.table == t) {
            let at = offset(gi);
            for (i, &k) in groups[gi].of(row).iter().enumerate() {
                if g.matched[at + i] {
                    continue;
                }
                if try_match(forest, rules, g, member, s, t, k) {
                    g.matched[at + i] = true;
                    merge_vertices(forest, rules, g, member, s, k);
                    done = true;
                    break;
                }
            }
        }
        if !done {
            suppress(rules, g, member, s);
        }
    }
    g.matched.truncate(base);
}

/// Slot `s` and its subtree leave the group: every earlier member's vertex there is
/// uncounted.
fn suppress(rules: &Rules, g: &mut Building, members: usize, s: usize) {
    if !g.slots[s].alive {
        return;
    }
    g.slots[s].alive = false;
    g.alive -= 1;
    g.trail.push(Undo::Killed(s));
    let table = g.slots[s].table;
    for m in 0..members.min(g.slots[s].rows.len()) {
        let row = g.slots[s].rows[m];
        rules.release(g, m, table, row);
    }
    for j in 0..g.slots[s].children.len() {
        let c = g.slots[s].children[j];
        suppress(rules, g, members, c);
    }
}

/// The group as released: live slots renumbered, parents first.
fn finish(g: Building, members: Vec<u32>) -> Group {
    let mut index = vec![usize::MAX; g.slots.len()];
    let mut slots = Vec::new();
    for (i, s) in g.slots.into_iter().enumerate() {
        if !s.alive {
            continue;
        }
        index[i] = slots.len();
        slots.push(Slot {
            table: s.table,
            parent: s.parent.map(|p| index[p]),
            rows: s.rows,
        });
    }
    Group { members, slots }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::annotate::tests::family;
    use crate::forest::{group_children, TableNodes};
    use crate::fraction::Fraction;
    use crate::sensitive::SensitiveColumn;

    fn sensitive(name: &str, codes: Vec<u32>) -> SensitiveColumn {
        let most = codes.iter().copied().max().unwrap_or(0);
        SensitiveColumn {
            column: name.into(),
            labels: (0..=most).map(|c| format!("s{c}")).collect(),
            codes,
            bounds: None,
        }
    }

    fn config(l: usize, rules: Vec<Rule>, variant: Variant) -> Config {
        Config {
            l,
            rules,
            partitions: 1,
            variant,
        }
    }

    /// The bound skips only candidates that could not win: the groups are the same with and
    /// without it.
    #[test]
    fn pruning_changes_nothing() {
        for seed in 0..4 {
            let f = family(seed, 40);
            for variant in [Variant::TreeTree, Variant::VertexVertex] {
                for l in [2, 3] {
                    let c = config(l, Vec::new(), variant);
                    assert_eq!(
                        anatomize_pruned(&f, &c, true),
                        anatomize_pruned(&f, &c, false)
                    );
                }
            }
        }
    }

    /// The argmin runs on two threads once a part has 64 candidates or more: one thread
    /// groups as several do, and the bound still changes nothing there.
    #[test]
    fn one_thread_groups_as_several_do() {
        let f = family(3, 160);
        let codes = &f.tables[0].sensitive[0].codes;
        let rules = vec![Rule {
            declared: 0,
            table: 0,
            column: 0,
            code: codes[0],
            m: 1,
            p: Fraction::new(1, 2).expect("p"),
        }];
        for variant in [Variant::TreeTree, Variant::VertexVertex] {
            let c = config(3, rules.clone(), variant);
            let many = anatomize(&f, &c);
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("a one-thread pool")
                .install(|| anatomize(&f, &c));
            assert_eq!(one, many);
            assert_eq!(anatomize_pruned(&f, &c, false), many);
            assert!(many.groups.len() > 20, "{}", many.groups.len());
        }
    }

    /// Without rules (or with p = 1) the variants differ only in their rule test, so they
    /// group alike and suppress alike (000 L1140; the spec's D13 and A20).
    #[test]
    fn without_binding_rules_both_variants_group_alike() {
        for seed in 0..4 {
            let f = family(seed, 40);
            let codes = &f.tables[0].sensitive[0].codes;
            let vacuous = vec![Rule {
                declared: 0,
                table: 0,
                column: 0,
                code: codes[0],
                m: 1,
                p: Fraction::new(1, 1).expect("p"),
            }];
            for rules in [Vec::new(), vacuous] {
                let tt = anatomize(&f, &config(2, rules.clone(), Variant::TreeTree));
                let vv = anatomize(&f, &config(2, rules, Variant::VertexVertex));
                assert_eq!(tt, vv, "seed {seed}");
            }
        }
    }

    /// Table 3.1: six people with six diseases, ℓ = 2: groups {1, 2}, {3, 4}, {5, 6}.
    #[test]
    fn table_3_1_is_tabular_anatomy() {
        let mut t = TableNodes::bare("t", Vec::new(), Vec::new(), vec![u32::MAX; 6]);
        t.sensitive = vec![sensitive("t.disease", (0..6).collect())];
        let f = Forest { tables: vec![t] };
        for variant in [Variant::TreeTree, Variant::VertexVertex] {
            let a = anatomize(&f, &config(2, Vec::new(), variant));
            let members: Vec<Vec<u32>> = a.groups.iter().map(|g| g.members.clone()).collect();
            assert_eq!(members, [vec![0, 1], vec![2, 3], vec![4, 5]]);
            assert!(a.suppressed.is_empty());
            assert!(a.groups.iter().all(|g| g.slots.len() == 1));
        }
    }

    /// Fig. 3.1: A (0+; Alcohol P. 2005, Alcohol P. 2006, Diaria 2007) and B (AB-; AIDS 2000,
    /// AIDS 2006, Flu 2006, Cold 2007). Codes: blood 0+ 0, AB- 1; diagnoses Alcohol P. 0,
    /// Diaria 1, AIDS 2, Flu 3, Cold 4.
    fn hospital() -> Forest {
        let mut patients = TableNodes::bare("patients", Vec::new(), Vec::new(), vec![u32::MAX; 2]);
        patients.sensitive = vec![sensitive("patients.blood", vec![0, 1])];
        let parent = vec![0, 0, 0, 1, 1, 1, 1];
        let mut visits = TableNodes::bare("visits", Vec::new(), Vec::new(), parent.clone());
        visits.sensitive = vec![sensitive("visits.diagnosis", vec![0, 0, 1, 2, 2, 3, 4])];
        patients.children = vec![group_children(2, &parent, 1)];
        Forest {
            tables: vec![patients, visits],
        }
    }

    fn rule(code: u32, m: u32, p: &str) -> Rule {
        Rule {
            declared: 0,
            table: 1,
            column: 0,
            code,
            m,
            p: Fraction::from_decimal(p).expect("a share"),
        }
    }

    /// The visit rows of each member, slot by slot below the root.
    fn visit_slots(a: &Anatomy) -> Vec<Vec<u32>> {
        assert_eq!(a.groups.len(), 1);
        let g = &a.groups[0];
        assert_eq!(g.members, [0, 1], "A, with fewer vertices, seeds");
        g.slots[1..].iter().map(|s| s.rows.clone()).collect()
    }

    /// The spec's hand traces (Sec. 7): v-v reproduces Fig. 3.4 (B loses AIDS 2006); t-t with
    /// μ_max = 1 pairs both AIDS with the Alcohol P. slots (B loses Cold 2007); with
    /// (Alcohol P., 2, 1/4) seed admission drops A's second Alcohol P.
    #[test]
    fn the_hospital_traces() {
        let f = hospital();
        let vv = anatomize(
            &f,
            &config(
                2,
                vec![rule(2, 1, "1/2"), rule(0, 2, "1/4")],
                Variant::VertexVertex,
            ),
        );
        assert_eq!(visit_slots(&vv), [vec![0, 3], vec![1, 5], vec![2, 6]]);
        let tt = anatomize(
            &f,
            &config(
                2,
                vec![rule(2, 1, "1/2"), rule(0, 2, "1/2")],
                Variant::TreeTree,
            ),
        );
        assert_eq!(visit_slots(&tt), [vec![0, 3], vec![1, 4], vec![2, 5]]);
        let strict = anatomize(&f, &config(2, vec![rule(0, 2, "1/4")], Variant::TreeTree));
        assert_eq!(visit_slots(&strict), [vec![0, 3], vec![2, 4]]);
    }

    /// On random four-table forests, both variants, a few rules: every entity is grouped or
    /// suppressed once; every slot holds ℓ rows of its table whose parents are the parent
    /// slot's rows; its sensitive values are distinct per column; every rule holds.
    #[test]
    fn groups_keep_their_invariants() {
        for seed in 0..6 {
            let f = family(seed, 30);
            let codes = &f.tables[0].sensitive[0].codes;
            let rules = vec![
                Rule {
                    declared: 0,
                    table: 0,
                    column: 0,
                    code: codes[0],
                    m: 1,
                    p: Fraction::new(1, 2).expect("p"),
                },
                Rule {
                    declared: 0,
                    table: 0,
                    column: 0,
                    code: codes[1],
                    m: 1,
                    p: Fraction::new(1, 3).expect("p"),
                },
            ];
            for variant in [Variant::TreeTree, Variant::VertexVertex] {
                for l in [2usize, 3] {
                    let c = Config {
                        l,
                        rules: rules.clone(),
                        partitions: 2,
                        variant,
                    };
                    let a = anatomize(&f, &c);
                    let mut seen: Vec<u32> = a.suppressed.clone();
                    for g in &a.groups {
                        assert_eq!(g.members.len(), l);
                        seen.extend(&g.members);
                        for (i, s) in g.slots.iter().enumerate() {
                            assert_eq!(s.rows.len(), l, "seed {seed}");
                            let t = &f.tables[s.table];
                            match s.parent {
                                None => {
                                    assert_eq!(i, 0);
                                    assert_eq!(s.rows, g.members);
                                }
                                Some(p) => {
                                    assert!(p < i);
                                    for (m, &r) in s.rows.iter().enumerate() {
                                        assert_eq!(t.parent[r as usize], g.slots[p].rows[m]);
                                    }
                                }
                            }
                            for col in &t.sensitive {
                                let mut v: Vec<u32> =
                                    s.rows.iter().map(|&r| col.codes[r as usize]).collect();
                                v.sort_unstable();
                                v.dedup();
                                assert_eq!(v.len(), l, "a slot's values are distinct");
                            }
                        }
                        for r in &c.rules {
                            let holding: Vec<u32> = g
                                .slots
                                .iter()
                                .filter(|s| s.table == r.table)
                                .flat_map(|s| {
                                    s.rows.iter().map(|&row| {
                                        f.tables[r.table].sensitive[r.column].codes[row as usize]
                                    })
                                })
                                .collect();
                            let eta = holding.iter().filter(|&&v| v == r.code).count() as u64;
                            match variant {
                                Variant::TreeTree => {
                                    // Root rules: a member holds the value at most once.
                                    assert!(eta <= tt_budget(r.p, l as u32) as u64);
                                }
                                Variant::VertexVertex => {
                                    assert!(
                                        eta <= vv_budget(r.p, r.m, l as u32).unwrap_or(u64::MAX)
                                    );
                                }
                            }
                        }
                    }
                    seen.sort_unstable();
                    assert_eq!(seen, (0..30).collect::<Vec<u32>>(), "seed {seed}");
                    // Groups form (the test is not vacuous; budgets of 0 and three root
                    // values leave many entities out).
                    assert!(!a.groups.is_empty(), "seed {seed}");
                }
            }
        }
    }
}
