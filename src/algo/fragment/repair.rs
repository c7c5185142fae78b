//! The class repairs of 004 Sec. 4.2 for two fragments (spec Sec. 2, Alg. 2-4): after each
//! fragment is k-anonymous on its own, class values are changed until every pair of
//! equivalence classes (one per fragment) joins on the class into 0 or at least k rows,
//! `J(x, y) = Σ_c f_x(c) · f_y(c)` (Thm 4.1, D7), or, for δ-selectivity, until every pair
//! sharing a published class has η >= δ (Def. 4.5, D13, D14).
//!
//! - [`naive`] (Sec. 4.2.2): every class of every EC becomes its majority class; two ECs then
//!   join into 0 rows or `|x| · |y| >= k²`.
//! - [`dgbe`] (Alg. 3, the dependency graph's BFS): only where a pair fails, one row at a
//!   time (`change`: a row of the EC's rarest class other than its majority becomes the
//!   majority class, ties to the smallest code, D16). A node is visited right after it is
//!   dequeued and never changes again (D9), so every edge, checked when its first endpoint is
//!   visited and again whenever its other endpoint changes, ends satisfied.
//! - [`delta`] (Alg. 4): the same search over EC-level class sets (Sec. 4.2.4), where a change
//!   drops the class of fewest original rows from a set.
//!
//! The graph's components come from a union-find over class values (the spec's decision for
//! Alg. 2), in a fixed order; each is searched from a random EC drawn from the run's seed,
//! and again from a random unvisited one while any is left (Alg. 2 lines 4 and 14: vanished
//! edges can cut a component). A change only removes classes from an EC, so edges vanish but
//! never appear, and each loop ends within `|EC| − max freq` changes when every EC has k
//! rows or more, which is checked first (spec Sec. 7).

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::eta::{Eta, EtaCache};

/// The equivalence classes of the two fragments: per fragment, per EC, its rows (rows in
/// no EC of a fragment were suppressed there). The caller keeps one fragment's ECs disjoint
/// and their labels distinct (Thm 4.1's proviso).
#[derive(Debug, Clone)]
pub(super) struct Ecs {
    pub of: [Vec<Vec<u32>>; 2],
}

/// A node of the dependency graph: (fragment, EC index).
type Node = (usize, usize);

/// An EC's class counts, sorted by class code, counts above 0.
type Counts = Vec<(u32, usize)>;

fn counts(rows: &[u32], class: &[u32]) -> Counts {
    let mut out: Counts = Vec::new();
    let mut codes: Vec<u32> = rows.iter().map(|&r| class[r as usize]).collect();
    codes.sort_unstable();
    for c in codes {
        match out.last_mut() {
            Some((last, n)) if *last == c => *n += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}

/// The majority class: the most rows, ties to the smallest code (D16).
fn majority(counts: &Counts) -> Option<u32> {
    counts
        .iter()
        .fold(None::<(u32, usize)>, |best, &(c, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((c, n)),
        })
        .map(|(c, _)| c)
}

/// Thm 4.1's `J(x, y)`: the rows two ECs join into on the class.
fn joined(x: &Counts, y: &Counts) -> usize {
    let (mut i, mut j, mut sum) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].0.cmp(&y[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += x[i].1 * y[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// Thm 4.1 (D7): a join of 1 to k − 1 rows re-forms a group smaller than k.
fn fails(j: usize, k: usize) -> bool {
    j > 0 && j < k
}

/// Spec Sec. 7: the repairs assume fragment k-anonymity (their loops end only then).
fn check_sizes(ecs: &Ecs, k: usize) -> Result<(), String> {
    for (f, classes) in ecs.of.iter().enumerate() {
        if let Some((e, rows)) = classes.iter().enumerate().find(|(_, r)| r.len() < k) {
            return Err(format!(
                "fragment {} has an equivalence class of {} row(s) (equivalence class {e}, counting from 0), fewer than k = {k}: the class repair needs every fragment k-anonymous first",
                f + 1,
                rows.len()
            ));
        }
    }
    Ok(())
}

/// Sec. 4.2.2: per fragment, every row of an EC gets the EC's majority class (ties to the
/// smallest code); rows in no EC keep theirs.
pub(super) fn naive(ecs: &Ecs, class: &[u32]) -> [Vec<u32>; 2] {
    std::array::from_fn(|f| {
        let mut out = class.to_vec();
        for rows in &ecs.of[f] {
            if let Some(m) = majority(&counts(rows, class)) {
                for &r in rows {
                    out[r as usize] = m;
                }
            }
        }
        out
    })
}

/// Per class code, the ECs of one fragment whose classes (`members`) hold it: the candidates
/// for an edge, filtered by what they still hold when the edges are asked for.
fn holders<'a>(members: impl Iterator<Item = &'a [u32]>, classes: usize) -> Vec<Vec<u32>> {
    let mut h: Vec<Vec<u32>> = vec![Vec::new(); classes];
    for (e, cs) in members.enumerate() {
        for &c in cs {
            h[c as usize].push(e as u32);
        }
    }
    h
}

/// The number of class codes: one past the largest.
fn codes(class: &[u32]) -> usize {
    class.iter().copied().max().map_or(0, |m| m as usize + 1)
}

/// The dependency graph's components (Alg. 2, by the spec's union-find over class values:
/// any EC of one fragment and any of the other holding a class are adjacent), each a list of
/// nodes, in the order of their first node (fragment 0's ECs first).
fn components(sets: &[Vec<Vec<u32>>; 2], classes: usize) -> Vec<Vec<Node>> {
    let mut parent: Vec<usize> = (0..classes).collect();
    fn root(parent: &mut [usize], mut c: usize) -> usize {
        while parent[c] != c {
            parent[c] = parent[parent[c]];
            c = parent[c];
        }
        c
    }
    for set in sets.iter().flatten() {
        for pair in set.windows(2) {
            let (a, b) = (
                root(&mut parent, pair[0] as usize),
                root(&mut parent, pair[1] as usize),
            );
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut index: Vec<Option<usize>> = vec![None; classes];
    let mut out: Vec<Vec<Node>> = Vec::new();
    for (f, fragment) in sets.iter().enumerate() {
        for (e, set) in fragment.iter().enumerate() {
            // An EC without a class (no rows) joins nothing: a component of its own.
            let Some(&first) = set.first() else {
                out.push(vec![(f, e)]);
                continue;
            };
            let r = root(&mut parent, first as usize);
            let at = *index[r].get_or_insert_with(|| {
                out.push(Vec::new());
                out.len() - 1
            });
            out[at].push((f, e));
        }
    }
    out
}

/// Per fragment, every EC's class counts and the set of its classes, before any change.
type Census = ([Vec<Counts>; 2], [Vec<Vec<u32>>; 2]);

fn census(ecs: &Ecs, class: &[u32]) -> Census {
    let counts: [Vec<Counts>; 2] =
        std::array::from_fn(|f| ecs.of[f].iter().map(|r| counts(r, class)).collect());
    let sets = std::array::from_fn(|f| {
        counts[f]
            .iter()
            .map(|cs| cs.iter().map(|&(c, _)| c).collect())
            .collect()
    });
    (counts, sets)
}

/// The working state of Alg. 3: every EC's rows and current class counts, the class each
/// row holds per fragment, and per fragment and class the ECs that held it at the start.
struct Graph<'a> {
    k: usize,
    rows: [&'a [Vec<u32>]; 2],
    counts: [Vec<Counts>; 2],
    class: [Vec<u32>; 2],
    holders: [Vec<Vec<u32>>; 2],
}

impl<'a> Graph<'a> {
    /// The graph before any change, from [`census`].
    fn new(ecs: &'a Ecs, class: &[u32], k: usize, census: Census) -> Graph<'a> {
        let (counts, sets) = census;
        Graph {
            k,
            rows: [&ecs.of[0], &ecs.of[1]],
            counts,
            class: [class.to_vec(), class.to_vec()],
            holders: std::array::from_fn(|f| {
                holders(sets[f].iter().map(Vec::as_slice), codes(class))
            }),
        }
    }

    /// `change(EQ)` (L426, D16): one row of the EC's rarest class other than its majority
    /// (ties to the smallest code; the row first in the EC's order) becomes the majority
    /// class. False when the EC holds one class: nothing to change.
    fn change(&mut self, (f, e): Node) -> bool {
        let counts = &mut self.counts[f][e];
        let Some(m) = majority(counts) else {
            return false;
        };
        let Some(&(rare, _)) = counts
            .iter()
            .filter(|&&(c, _)| c != m)
            .min_by_key(|&&(c, n)| (n, c))
        else {
            return false;
        };
        let row = self.rows[f][e]
            .iter()
            .copied()
            .find(|&r| self.class[f][r as usize] == rare)
            .expect("a class counted in an EC is held by one of its rows");
        self.class[f][row as usize] = m;
        for entry in counts.iter_mut() {
            if entry.0 == rare {
                entry.1 -= 1;
            } else if entry.0 == m {
                entry.1 += 1;
            }
        }
        counts.retain(|&(_, n)| n > 0);
        true
    }
}

/// What Alg. 3 and Alg. 4 share: the graph's nodes are `(fragment, EC)`; an edge joins ECs
/// of the two fragments sharing a class now; a pair fails its condition (Thm 4.1's J, or
/// η below δ); a change makes one EC's classes fewer or more uniform.
trait Repairable {
    /// The ECs of the other fragment sharing a class with `node` now (Alg. 3 line 6:
    /// recomputed, since edges vanish), ascending.
    fn neighbours(&self, node: Node) -> Vec<usize>;
    /// Whether `node` and the other fragment's EC `y` fail the condition.
    fn fails(&mut self, node: Node, y: usize) -> bool;
    /// One step of `change(EQ)`; false when `node` cannot change further.
    fn change(&mut self, node: Node) -> bool;
    /// What is wrong with the pair `x`, `y`, for an error.
    fn failure(&mut self, x: Node, y: Node) -> String;
}

/// The other fragment's ECs in `holders[c]` for each class `c` of `held` that still hold
/// `c` by `holds`, ascending and once each.
fn sharing(
    held: impl Iterator<Item = u32>,
    holders: &[Vec<u32>],
    holds: impl Fn(usize, u32) -> bool,
) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for c in held {
        out.extend(
            holders[c as usize]
                .iter()
                .map(|&y| y as usize)
                .filter(|&y| holds(y, c)),
        );
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl Repairable for Graph<'_> {
    fn neighbours(&self, (f, e): Node) -> Vec<usize> {
        let other = &self.counts[1 - f];
        sharing(
            self.counts[f][e].iter().map(|&(c, _)| c),
            &self.holders[1 - f],
            |y, c| other[y].iter().any(|&(d, _)| d == c),
        )
    }
    fn fails(&mut self, (f, e): Node, y: usize) -> bool {
        fails(joined(&self.counts[f][e], &self.counts[1 - f][y]), self.k)
    }
    fn change(&mut self, node: Node) -> bool {
        Graph::change(self, node)
    }
    fn failure(&mut self, x: Node, y: Node) -> String {
        let j = joined(&self.counts[x.0][x.1], &self.counts[y.0][y.1]);
        format!("joins into {j} row(s), fewer than k = {}", self.k)
    }
}

/// How a node is named in a message.
fn name((f, e): Node) -> String {
    format!("fragment {}'s equivalence class {e}", f + 1)
}

/// Spec Sec. 7's guard, which fragment k-anonymity keeps from firing: `un` holds one class
/// (or publishes one) and still fails with `other`.
fn stuck(un: Node, other: Node, why: String) -> String {
    format!(
        "internal: the class repair cannot change {} further, and its pair with {} still {why}",
        name(un),
        name(other)
    )
}

/// Alg. 3 (and Alg. 4) lines 7-14 for the unvisited neighbour `un` of the visited `cur`:
/// `un` changes until its pair with `cur` holds (lines 7-9), then until its pair with every
/// visited neighbour holds again (lines 10-14: a change of `un` may break an edge checked
/// before; `cur` is one of them).
fn settle(
    g: &mut impl Repairable,
    cur: Node,
    un: Node,
    visited: &[Vec<bool>; 2],
) -> Result<(), String> {
    let mut changed = false;
    while g.fails(cur, un.1) {
        if !g.change(un) {
            let why = g.failure(cur, un);
            return Err(stuck(un, cur, why));
        }
        changed = true;
    }
    while changed {
        changed = false;
        for vn in g.neighbours(un) {
            let vn = (1 - un.0, vn);
            if visited[vn.0][vn.1] && g.fails(vn, un.1) {
                if !g.change(un) {
                    let why = g.failure(vn, un);
                    return Err(stuck(un, vn, why));
                }
                changed = true;
                break;
            }
        }
    }
    Ok(())
}

/// The BFS of Alg. 3 and Alg. 4 (lines 1-16 with D9: visit right after dequeue, skip what
/// was visited, enqueue once) over each component in turn, from a random EC of it, and
/// again from a random unvisited one while any is left (Alg. 2 lines 4 and 14).
fn search(g: &mut impl Repairable, components: &[Vec<Node>], seed: u64) -> Result<(), String> {
    let size = |f: usize| components.iter().flatten().filter(|n| n.0 == f).count();
    let mut visited: [Vec<bool>; 2] = std::array::from_fn(|f| vec![false; size(f)]);
    let mut queued = visited.clone();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for component in components {
        // A seeded shuffle: its first node is a uniform draw, and each later unvisited one
        // a uniform draw among the unvisited.
        let mut starts = component.clone();
        for i in (1..starts.len()).rev() {
            starts.swap(i, rng.random_range(0..=i));
        }
        for start in starts {
            if visited[start.0][start.1] {
                continue;
            }
            let mut queue = VecDeque::from([start]);
            queued[start.0][start.1] = true;
            while let Some(cur) = queue.pop_front() {
                if visited[cur.0][cur.1] {
                    continue;
                }
                visited[cur.0][cur.1] = true;
                for y in g.neighbours(cur) {
                    let un = (1 - cur.0, y);
                    if visited[un.0][y] {
                        continue;
                    }
                    settle(g, cur, un, &visited)?;
                    if !queued[un.0][y] {
                        queued[un.0][y] = true;
                        queue.push_back(un);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Alg. 3 (DGBE, with D9 and D16) over every component of the dependency graph: per
/// fragment, the class of every row after the repair (rows in no EC keep theirs). Every
/// pair of ECs across the fragments then joins into 0 or at least k rows.
pub(super) fn dgbe(ecs: &Ecs, class: &[u32], k: usize, seed: u64) -> Result<[Vec<u32>; 2], String> {
    check_sizes(ecs, k)?;
    let census = census(ecs, class);
    let components = components(&census.1, codes(class));
    let mut g = Graph::new(ecs, class, k, census);
    search(&mut g, &components, seed)?;
    Ok(g.class)
}

/// Alg. 4's state: every EC's size, its published class set and its rows' original class
/// counts (which choose what to remove), per fragment and class the ECs that published it at
/// the start, and η remembered.
struct Sets {
    k: usize,
    size: [Vec<usize>; 2],
    sets: [Vec<Vec<u32>>; 2],
    counts: [Vec<Counts>; 2],
    holders: [Vec<Vec<u32>>; 2],
    eta: EtaCache,
    delta: f64,
}

impl Sets {
    /// η of the pair, or None when the two share no published class.
    fn eta(&mut self, (f, e): Node, y: usize) -> Option<Eta> {
        let (x, other) = (&self.sets[f][e], &self.sets[1 - f][y]);
        let w = x.iter().filter(|c| other.binary_search(c).is_ok()).count();
        (w > 0).then(|| {
            let (c1, c2) = (x.len(), other.len());
            self.eta
                .eta(self.size[f][e], c1, self.size[1 - f][y], c2, w, self.k)
        })
    }
}

impl Repairable for Sets {
    fn neighbours(&self, (f, e): Node) -> Vec<usize> {
        let other = &self.sets[1 - f];
        sharing(
            self.sets[f][e].iter().copied(),
            &self.holders[1 - f],
            |y, c| other[y].binary_search(&c).is_ok(),
        )
    }
    /// Def. 4.5 on a sharing pair only (D13), passing at `>= δ` (D14), exactly.
    fn fails(&mut self, node: Node, y: usize) -> bool {
        let delta = self.delta;
        self.eta(node, y).is_some_and(|e| !e.at_least(delta))
    }
    /// `change(EQ)` of Alg. 4 (L446): the published class of the fewest original rows
    /// (ties to the smallest code) leaves the set, its rows becoming ambiguous slots; never
    /// the last one (an EC with one class joins every sharing EC at η = 1).
    fn change(&mut self, (f, e): Node) -> bool {
        let set = &self.sets[f][e];
        if set.len() < 2 {
            return false;
        }
        let count = |c: u32| {
            self.counts[f][e]
                .iter()
                .find(|&&(d, _)| d == c)
                .map_or(0, |&(_, n)| n)
        };
        let Some(&gone) = set.iter().min_by_key(|&&c| (count(c), c)) else {
            return false;
        };
        self.sets[f][e].retain(|&c| c != gone);
        true
    }
    fn failure(&mut self, x: Node, y: Node) -> String {
        let value = self.eta(x, y.1).map_or(1.0, |e| e.value());
        format!("has η = {value:.4}, below delta = {}", self.delta)
    }
}

/// Alg. 4 (δ-selectivity, with D9, D13, D14) over every component: per fragment, per EC (in
/// the input's order), the classes it publishes, ascending (Sec. 4.2.4: its rows publish no
/// class of their own). Every pair of ECs across the fragments sharing a published class
/// then has η >= `delta`.
pub(super) fn delta(
    ecs: &Ecs,
    class: &[u32],
    k: usize,
    delta: f64,
    seed: u64,
) -> Result<[Vec<Vec<u32>>; 2], String> {
    check_sizes(ecs, k)?;
    let (counts, sets) = census(ecs, class);
    let components = components(&sets, codes(class));
    let mut g = Sets {
        k,
        size: std::array::from_fn(|f| ecs.of[f].iter().map(Vec::len).collect()),
        holders: std::array::from_fn(|f| holders(sets[f].iter().map(Vec::as_slice), codes(class))),
        sets,
        counts,
        eta: EtaCache::default(),
        delta,
    };
    search(&mut g, &components, seed)?;
    Ok(g.sets)
}

/// Tuples whose original class their EC's published set does not hold: their class became
/// ambiguous (Alg. 4's distortion, one fragment).
pub(super) fn ambiguous(ecs_of_fragment: &[Vec<u32>], class: &[u32], sets: &[Vec<u32>]) -> usize {
    ecs_of_fragment
        .iter()
        .zip(sets)
        .map(|(rows, set)| {
            rows.iter()
                .filter(|&&r| set.binary_search(&class[r as usize]).is_err())
                .count()
        })
        .sum()
}

/// Class cells a repair changed (naive and DGBE's distortion, one fragment).
pub(super) fn distortions(before: &[u32], after: &[u32]) -> usize {
    before.iter().zip(after).filter(|(a, b)| a != b).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::fragment::eta::eta;

    /// A random case: `rows` rows with classes drawn from `classes` values (one of them
    /// favoured at random); each fragment leaves out a few rows (suppressed there) and cuts
    /// the rest at random into ECs of k to 2k − 1 rows. Half the time fragment 0's ECs follow
    /// the class (as an anonymizer's groups often do), so they are nearly pure.
    fn random(rng: &mut ChaCha8Rng, rows: usize, k: usize, classes: u32) -> (Ecs, Vec<u32>) {
        let favour = rng.random_range(0.0..0.8);
        let class: Vec<u32> = (0..rows)
            .map(|_| {
                if rng.random_bool(favour) {
                    0
                } else {
                    rng.random_range(0..classes)
                }
            })
            .collect();
        let sorted = rng.random_bool(0.5);
        let of = std::array::from_fn(|f| {
            let mut order: Vec<u32> = (0..rows as u32).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
            order.truncate(rows - rng.random_range(0..k));
            if f == 0 && sorted {
                order.sort_by_key(|&r| class[r as usize]);
            }
            let mut ecs: Vec<Vec<u32>> = Vec::new();
            let mut at = 0;
            while order.len() - at >= 2 * k {
                let n = rng.random_range(k..=(2 * k - 1).min(order.len() - at - k));
                ecs.push(order[at..at + n].to_vec());
                at += n;
            }
            ecs.push(order[at..].to_vec());
            ecs
        });
        (Ecs { of }, class)
    }

    /// The parameters of the random cases: rows 30..300, k 2..6, 2..4 classes.
    fn cases(seed: u64, count: usize) -> Vec<(usize, Ecs, Vec<u32>)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..count)
            .map(|_| {
                let (rows, k) = (rng.random_range(30..300), rng.random_range(2..=6));
                let classes = rng.random_range(2..=4);
                let (ecs, class) = random(&mut rng, rows, k, classes);
                (k, ecs, class)
            })
            .collect()
    }

    /// Every pair of ECs across the fragments joins into 0 or at least k rows (Thm 4.1).
    fn safe(ecs: &Ecs, repaired: &[Vec<u32>; 2], k: usize) -> bool {
        let a: Vec<Counts> = ecs.of[0].iter().map(|r| counts(r, &repaired[0])).collect();
        let b: Vec<Counts> = ecs.of[1].iter().map(|r| counts(r, &repaired[1])).collect();
        a.iter().all(|x| b.iter().all(|y| !fails(joined(x, y), k)))
    }

    /// Rows in no EC of fragment `f`.
    fn suppressed(ecs: &Ecs, f: usize, rows: usize) -> Vec<usize> {
        let mut kept = vec![false; rows];
        for &r in ecs.of[f].iter().flatten() {
            kept[r as usize] = true;
        }
        (0..rows).filter(|&r| !kept[r]).collect()
    }

    #[test]
    fn both_repairs_leave_every_join_at_zero_or_k_rows_and_dgbe_changes_less() {
        let (mut naive_changes, mut dgbe_changes, mut worse) = (0, 0, 0);
        for (i, (k, ecs, class)) in cases(1, 300).into_iter().enumerate() {
            let n = naive(&ecs, &class);
            assert!(safe(&ecs, &n, k), "naive, case {i}");
            let d = dgbe(&ecs, &class, k, i as u64).expect("repairs");
            assert!(safe(&ecs, &d, k), "dgbe, case {i}");
            for f in 0..2 {
                for r in suppressed(&ecs, f, class.len()) {
                    assert_eq!((n[f][r], d[f][r]), (class[r], class[r]), "case {i}");
                }
            }
            let count = |r: &[Vec<u32>; 2]| distortions(&class, &r[0]) + distortions(&class, &r[1]);
            let (a, b) = (count(&n), count(&d));
            naive_changes += a;
            dgbe_changes += b;
            worse += usize::from(b > a);
        }
        // Always so: a change moves a row to its EC's majority, which stays the majority, so
        // an EC changes at most `|EC| − max freq` rows, naive's count.
        assert_eq!(worse, 0, "DGBE changed more than naive in {worse} cases");
        assert!(dgbe_changes > 0, "the cases exercise the repair");
        assert!(
            dgbe_changes < naive_changes,
            "{dgbe_changes} >= {naive_changes}"
        );
    }

    #[test]
    fn a_safe_input_is_left_as_it_is() {
        // Two classes and ECs of k rows or more always join into 0 or k rows or more: one
        // class shared gives f · |y| >= k, both give at least |x| + |y| − 2 >= k.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for seed in 0..20 {
            let (ecs, class) = random(&mut rng, 120, 4, 2);
            let d = dgbe(&ecs, &class, 4, seed).expect("repairs");
            assert_eq!(d, [class.clone(), class.clone()]);
        }
        // Pure ECs of any number of classes: every join is 0 or |x| · |y|.
        let class: Vec<u32> = (0..60).map(|r| r / 10).collect();
        let pure: Vec<Vec<u32>> = (0..6).map(|e| (e * 10..e * 10 + 10).collect()).collect();
        let ecs = Ecs {
            of: [pure.clone(), pure],
        };
        assert_eq!(
            dgbe(&ecs, &class, 5, 3).expect("repairs"),
            [class.clone(), class]
        );
    }

    #[test]
    fn the_same_seed_repairs_alike() {
        for (i, (k, ecs, class)) in cases(2, 20).into_iter().enumerate() {
            let seed = 11 + i as u64;
            assert_eq!(
                dgbe(&ecs, &class, k, seed).expect("repairs"),
                dgbe(&ecs, &class, k, seed).expect("repairs")
            );
            assert_eq!(
                delta(&ecs, &class, k, 0.5, seed).expect("repairs"),
                delta(&ecs, &class, k, 0.5, seed).expect("repairs")
            );
        }
    }

    #[test]
    fn a_failing_pair_is_repaired_by_changing_one_row() {
        // k = 4: x = {a: 3, b: 1}, y = {b: 1, c: 3}: J = 1.
        let class = vec![0, 0, 0, 1, 1, 2, 2, 2];
        let ecs = Ecs {
            of: [vec![vec![0, 1, 2, 3]], vec![vec![4, 5, 6, 7]]],
        };
        for seed in 0..8 {
            let d = dgbe(&ecs, &class, 4, seed).expect("repairs");
            assert!(safe(&ecs, &d, 4));
            // The rare b of whichever EC the search reached second.
            let changed = distortions(&class, &d[0]) + distortions(&class, &d[1]);
            assert_eq!(changed, 1, "{d:?}");
        }
        assert_eq!(
            naive(&ecs, &class),
            [vec![0, 0, 0, 0, 1, 2, 2, 2], vec![0, 0, 0, 1, 2, 2, 2, 2]]
        );
    }

    #[test]
    fn components_follow_shared_classes_in_the_order_of_their_first_ec() {
        let sets = [vec![vec![0, 1], vec![2]], vec![vec![1], vec![3]]];
        assert_eq!(
            components(&sets, 4),
            vec![vec![(0, 0), (1, 0)], vec![(0, 1)], vec![(1, 1)]]
        );
    }

    #[test]
    fn delta_leaves_every_sharing_pair_at_delta_and_no_set_empty() {
        let mut shrunk = 0;
        for (i, (k, ecs, class)) in cases(3, 60).into_iter().enumerate() {
            let share = [0.3, 0.5, 0.9, 1.0][i % 4];
            let sets = delta(&ecs, &class, k, share, i as u64).expect("repairs");
            for (f, (of, fragment_sets)) in ecs.of.iter().zip(&sets).enumerate() {
                assert_eq!(fragment_sets.len(), of.len());
                for (rows, set) in of.iter().zip(fragment_sets) {
                    assert!(!set.is_empty() && set.is_sorted(), "case {i}");
                    // Sets only shrink: each published class is one of the EC's rows'.
                    assert!(set
                        .iter()
                        .all(|c| rows.iter().any(|&r| class[r as usize] == *c)));
                }
                let dropped: usize = of
                    .iter()
                    .zip(fragment_sets)
                    .map(|(rows, set)| {
                        rows.iter()
                            .filter(|&&r| !set.contains(&class[r as usize]))
                            .count()
                    })
                    .sum();
                assert_eq!(
                    ambiguous(of, &class, fragment_sets),
                    dropped,
                    "fragment {f}"
                );
            }
            shrunk += sets
                .iter()
                .zip(&ecs.of)
                .flat_map(|(fs, of)| fs.iter().zip(of))
                .filter(|(set, rows)| set.len() < counts(rows, &class).len())
                .count();
            for (x, sx) in ecs.of[0].iter().zip(&sets[0]) {
                for (y, sy) in ecs.of[1].iter().zip(&sets[1]) {
                    let w = sx.iter().filter(|c| sy.contains(c)).count();
                    if w > 0 {
                        let e = eta(x.len(), sx.len(), y.len(), sy.len(), w, k);
                        assert!(e.at_least(share), "case {i}: η {} < {share}", e.value());
                    }
                }
            }
        }
        assert!(shrunk > 0, "the cases exercise the repair");
    }

    #[test]
    fn an_equivalence_class_below_k_is_refused_by_name() {
        let ecs = Ecs {
            of: [vec![vec![0, 1, 2]], vec![vec![0, 1, 2], vec![3, 4]]],
        };
        let class = [0, 1, 0, 1, 0];
        for e in [
            dgbe(&ecs, &class, 3, 0).expect_err("below k"),
            delta(&ecs, &class, 3, 0.5, 0)
                .map(|_| ())
                .expect_err("below k"),
        ] {
            assert!(
                e.contains("fragment 2")
                    && e.contains("equivalence class 1")
                    && e.contains("2 row(s)"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_pair_that_cannot_change_is_named_not_looped_on() {
        // Below k on purpose (past the size check): {a: 1} and {a: 1} join into 1 < 3 and
        // neither can change.
        let ecs = Ecs {
            of: [vec![vec![0]], vec![vec![1]]],
        };
        let class = [0, 0];
        let census = census(&ecs, &class);
        let components = components(&census.1, 1);
        let mut g = Graph::new(&ecs, &class, 3, census);
        let e = search(&mut g, &components, 0).expect_err("stuck");
        assert!(
            e.contains("fragment 1's equivalence class 0")
                && e.contains("fragment 2's equivalence class 0")
                && e.contains("1 row(s)"),
            "{e}"
        );
    }

    #[test]
    fn a_single_class_needs_no_change() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let (ecs, _) = random(&mut rng, 60, 3, 1);
        let class = vec![0; 60];
        assert_eq!(
            dgbe(&ecs, &class, 3, 0).expect("repairs"),
            [class.clone(), class.clone()]
        );
        assert_eq!(naive(&ecs, &class), [class.clone(), class.clone()]);
        let sets = delta(&ecs, &class, 3, 1.0, 0).expect("repairs");
        assert!(sets.iter().flatten().all(|s| s == &[0]));
    }

    #[test]
    fn distortions_count_changed_cells() {
        assert_eq!(distortions(&[0, 1, 2, 1], &[0, 0, 2, 2]), 2);
        assert_eq!(
            ambiguous(
                &[vec![0, 1], vec![2, 3]],
                &[0, 1, 1, 2],
                &[vec![0, 1], vec![2]]
            ),
            1
        );
    }
}
