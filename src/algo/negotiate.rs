//! Online negotiation over the annotated lattice (002 Ch. 4, the spec's Sec. 2.12, the
//! corrected reference algorithm): a request (k or l, a budget of suppressed entities, the
//! most level accepted per column) gets the exact answer or three relaxations, each keeping
//! two of the request's three parameters and giving the closest value of the third.
//!
//! - The top acceptable node v_max is the request's level vector (Theorem 1). Suppression
//!   only shrinks going up (Theorem 2), so if v_max meets the request the best answer lies
//!   below it (Theorem 3) and is found level by level through meeting nodes (P3, [`exact`]);
//!   if not, relaxing the suppression or k is answered at v_max (Theorems 4-6) and relaxing
//!   the levels is a binary search on height over the whole lattice (P4, [`relax_levels`]).
//! - Every answer is chosen by order O (decision 9): the lowest height, then the fewest
//!   entities suppressed, then rows per table, then the first level vector.
//! - An answer keeps someone: a node that suppresses every entity meets no request.
//! - k_r and l_r lie in [2, k - 1] (decision 13); relaxing the levels starts at the lowest
//!   height outside v_max's sublattice, not at v_max's (decision 5), and tests the top node
//!   first (decision 6): multi-relationally the top can fail (the shape floor).

use std::collections::HashSet;

use crate::algo::kernel::annotate::{Annotated, HistogramRef, Measure};

/// What a user asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub measure: Measure,
    /// k (or l): the least class size (or distinct sensitive values) accepted.
    pub value: u32,
    /// The most entities that may be suppressed.
    pub budget: u64,
    /// The highest level accepted per column (the top acceptable node).
    pub max_levels: Vec<u16>,
}

/// One node offered, with what it costs.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub levels: Vec<u16>,
    /// The sum of its levels.
    pub height: u32,
    /// The k (or l) it meets.
    pub value: u32,
    /// Rows suppressed per table (entry 0: entities).
    pub suppressed: Vec<u64>,
}

/// Which of the request's parameters a relaxation gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relaxed {
    /// Keeps k and the levels: the least suppression v_max's sublattice can do.
    Suppression,
    /// Keeps k and the budget: the lowest height over the whole lattice.
    Levels,
    /// Keeps the levels and the budget: the largest k (or l) below the one asked.
    Value,
}

impl Relaxed {
    /// The name users see.
    pub fn name(self, measure: Measure) -> &'static str {
        match (self, measure) {
            (Relaxed::Suppression, _) => "suppression",
            (Relaxed::Levels, _) => "levels",
            (Relaxed::Value, Measure::Size) => "k",
            (Relaxed::Value, Measure::Distinct) => "l",
        }
    }
}

/// A relaxation: an answer, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Relaxation {
    pub relaxes: Relaxed,
    pub answer: Result<Answer, String>,
}

/// What a request gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiation {
    /// The top acceptable node, measured at the requested value.
    pub v_max: Answer,
    pub exact: Option<Answer>,
    /// Empty when there is an exact answer; otherwise suppression, levels, value (Fig. 4.3
    /// lines 15-17).
    pub relaxations: Vec<Relaxation>,
    /// Nodes whose histogram was read.
    pub visited: usize,
    /// Over a partial lattice: whether v_max has its histogram (if not, its suppression is a
    /// lower bound, read from its lowest computed ancestors).
    pub v_max_computed: bool,
}

/// The lattice as a search reads it: histograms, and every node's neighbours.
struct Search<'a> {
    lattice: &'a Annotated,
    measure: Measure,
    visited: HashSet<usize>,
}

impl<'a> Search<'a> {
    fn histogram(&mut self, index: usize) -> HistogramRef<'a> {
        self.visited.insert(index);
        self.lattice
            .histogram(self.measure, index)
            .expect("the request's measure is annotated (checked before negotiating)")
    }

    /// Whether the node meets `value` within `budget` and keeps someone.
    fn meets(&mut self, index: usize, value: u32, budget: u64) -> bool {
        let e = self.histogram(index).entities(value);
        e <= budget && e < self.lattice.entities
    }

    fn answer(&mut self, index: usize, value: u32) -> Answer {
        let levels = self.lattice.levels(index);
        Answer {
            height: levels.iter().map(|&l| l as u32).sum(),
            levels,
            value,
            suppressed: self.histogram(index).suppressed(value).to_vec(),
        }
    }

    /// The best of `nodes` by order O, all meeting `value`.
    fn best(&mut self, nodes: impl IntoIterator<Item = usize>, value: u32) -> Option<Answer> {
        nodes
            .into_iter()
            .map(|i| self.answer(i, value))
            .min_by(|a, b| {
                (a.height, &a.suppressed, &a.levels).cmp(&(b.height, &b.suppressed, &b.levels))
            })
    }
}

/// Answers `q` (002 Fig. 4.3 as the spec's Sec. 2.12 corrects it). The request is valid:
/// its value at least 1, its levels within the heights, its measure annotated.
pub fn negotiate(lattice: &Annotated, q: &Request) -> Negotiation {
    let mut s = Search {
        lattice,
        measure: q.measure,
        visited: HashSet::new(),
    };
    let v_max = lattice.index(&q.max_levels);
    let v_answer = s.answer(v_max, q.value);
    // Lines 2-3: v_max meets the request, so the answer is in its sublattice (Theorem 3).
    if s.meets(v_max, q.value, q.budget) {
        let exact = exact(&mut s, v_max, q.value, q.budget);
        return Negotiation {
            v_max: v_answer,
            exact: Some(exact),
            relaxations: Vec::new(),
            visited: s.visited.len(),
            v_max_computed: true,
        };
    }
    // Lines 4-5: the least suppression that lets v_max meet k (Theorem 6).
    let least = v_answer.suppressed[0];
    let suppression = if least < lattice.entities {
        Ok(exact(&mut s, v_max, q.value, least))
    } else {
        Err(format!(
            "at {} = {} the top acceptable node suppresses every entity",
            Relaxed::Value.name(q.measure),
            q.value
        ))
    };
    // Lines 6-7: the largest k' in [2, k - 1] v_max meets within the budget (Theorems 4-5).
    let value = relax_value(&mut s, v_max, q);
    // Line 8: the lowest height anywhere that meets k within the budget (Theorem 7 (ii)).
    let levels = relax_levels(&mut s, q);
    Negotiation {
        v_max: v_answer,
        exact: None,
        relaxations: relaxations(suppression, levels, value),
        visited: s.visited.len(),
        v_max_computed: true,
    }
}

/// Answers `q` over a partial lattice (002 Fig. 5.15 as the spec's Sec. 2.9 and 2.12
/// correct it): every answer is the best computed node by order O, so none is proven
/// optimal over the whole lattice. When v_max is computed, relaxing the suppression and k
/// read it (Theorems 4-6 hold, the relaxations of Fig. 5.23); otherwise they take the best
/// computed node below it, as Fig. 5.15 does. Relaxing the levels scans every computed node
/// (a binary search on height is not sound over missing nodes, decision 12).
pub fn negotiate_partial(lattice: &Annotated, q: &Request) -> Negotiation {
    let mut s = Search {
        lattice,
        measure: q.measure,
        visited: HashSet::new(),
    };
    let computed: Vec<usize> = (0..lattice.nodes())
        .filter(|&i| lattice.is_computed(i))
        .collect();
    let below: Vec<usize> = computed
        .iter()
        .copied()
        .filter(|&i| {
            lattice
                .levels(i)
                .iter()
                .zip(&q.max_levels)
                .all(|(l, m)| l <= m)
        })
        .collect();
    let v_max = lattice.index(&q.max_levels);
    let v_max_computed = lattice.is_computed(v_max);
    let v_answer = if v_max_computed {
        s.answer(v_max, q.value)
    } else {
        lower_bound(&mut s, &q.max_levels, q.value)
    };
    let meeting = |s: &mut Search, nodes: &[usize], value: u32, budget: u64| -> Vec<usize> {
        nodes
            .iter()
            .copied()
            .filter(|&i| s.meets(i, value, budget))
            .collect()
    };
    let exact_nodes = meeting(&mut s, &below, q.value, q.budget);
    if let Some(exact) = s.best(exact_nodes, q.value) {
        return Negotiation {
            v_max: v_answer,
            exact: Some(exact),
            relaxations: Vec::new(),
            visited: s.visited.len(),
            v_max_computed,
        };
    }
    let name = Relaxed::Value.name(q.measure);
    // Relaxing suppression: v_max's own, or the least of a computed node below it.
    let least = below
        .iter()
        .map(|&i| s.histogram(i).entities(q.value))
        .min()
        .unwrap_or(lattice.entities);
    let least = if v_max_computed {
        v_answer.suppressed[0]
    } else {
        least
    };
    let suppression = if least < lattice.entities {
        let nodes = meeting(&mut s, &below, q.value, least);
        s.best(nodes, q.value)
            .ok_or_else(|| "no computed node below the top acceptable node meets it".to_string())
    } else {
        Err(format!(
            "at {name} = {} every computed node below the top acceptable node suppresses every entity",
            q.value
        ))
    };
    // Relaxing k: the largest k' in [2, k - 1] v_max (or a computed node below it) meets.
    let candidates: Vec<usize> = if v_max_computed {
        vec![v_max]
    } else {
        below.clone()
    };
    let largest = candidates
        .iter()
        .filter_map(|&i| {
            let k = s
                .histogram(i)
                .largest_within(q.budget)
                .unwrap_or(u32::MAX)
                .min(q.value.saturating_sub(1));
            (k >= 2 && s.meets(i, k, q.budget)).then_some(k)
        })
        .max();
    let value = match largest {
        Some(k) => {
            let nodes = meeting(&mut s, &below, k, q.budget);
            s.best(nodes, k)
                .ok_or_else(|| "no computed node below the top acceptable node meets it".into())
        }
        None => Err(format!(
            "no computed node below the top acceptable node meets {name} = 2 within {} entities",
            q.budget
        )),
    };
    // Relaxing the levels: the best computed node anywhere.
    let levels = if q.max_levels == lattice.heights {
        Err("every column may already reach its top level: no level to relax".to_string())
    } else {
        let nodes = meeting(&mut s, &computed, q.value, q.budget);
        s.best(nodes, q.value).ok_or_else(|| {
            format!(
                "no computed node meets {name} = {} within {} entities",
                q.value, q.budget
            )
        })
    };
    Negotiation {
        v_max: v_answer,
        exact: None,
        relaxations: relaxations(suppression, levels, value),
        visited: s.visited.len(),
        v_max_computed,
    }
}

/// An uncomputed node's suppression bounded from below: per table the most any computed
/// ancestor suppresses (an ancestor keeps a superset, P2; the top node is always computed).
fn lower_bound(s: &mut Search, levels: &[u16], value: u32) -> Answer {
    let lattice = s.lattice;
    let mut bound = vec![0u64; lattice.tables];
    for i in 0..lattice.nodes() {
        if !lattice.is_computed(i) {
            continue;
        }
        let up = lattice.levels(i);
        if up.iter().zip(levels).all(|(u, l)| u >= l) {
            for (b, &x) in bound.iter_mut().zip(s.histogram(i).suppressed(value)) {
                *b = (*b).max(x);
            }
        }
    }
    Answer {
        height: levels.iter().map(|&l| l as u32).sum(),
        levels: levels.to_vec(),
        value,
        suppressed: bound,
    }
}

/// The three relaxations in Fig. 4.3's order.
fn relaxations(
    suppression: Result<Answer, String>,
    levels: Result<Answer, String>,
    value: Result<Answer, String>,
) -> Vec<Relaxation> {
    [
        (Relaxed::Suppression, suppression),
        (Relaxed::Levels, levels),
        (Relaxed::Value, value),
    ]
    .into_iter()
    .map(|(relaxes, answer)| Relaxation { relaxes, answer })
    .collect()
}

/// The lowest node below `top` meeting `value` within `budget` (the spec's `Exact`, 002 Fig.
/// 4.4 level by level): the frontier steps down through meeting nodes until none of its
/// children meets; every meeting node has a meeting parent (P3), so the last frontier holds
/// every meeting node of the lowest height reached.
fn exact(s: &mut Search, top: usize, value: u32, budget: u64) -> Answer {
    let heights = &s.lattice.heights;
    let mut frontier = vec![top];
    loop {
        let mut next: Vec<usize> = Vec::new();
        let mut seen = HashSet::new();
        for &node in &frontier {
            let levels = s.lattice.levels(node);
            for c in 0..heights.len() {
                if levels[c] == 0 {
                    continue;
                }
                let mut down = levels.clone();
                down[c] -= 1;
                let child = s.lattice.index(&down);
                if seen.insert(child) && s.meets(child, value, budget) {
                    next.push(child);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    s.best(frontier, value)
        .expect("the frontier starts with a node that meets the request")
}

/// Relaxation of k (or l): the largest value in [2, k - 1] the top acceptable node meets
/// within the budget, and the best node below it for that value.
fn relax_value(s: &mut Search, v_max: usize, q: &Request) -> Result<Answer, String> {
    let name = Relaxed::Value.name(q.measure);
    let h = s.histogram(v_max);
    let largest = h.largest_within(q.budget).unwrap_or(u32::MAX);
    let candidate = largest.min(q.value.saturating_sub(1));
    if candidate < 2 || !s.meets(v_max, candidate, q.budget) {
        let at_two = s.histogram(v_max).entities(2);
        return Err(if at_two >= s.lattice.entities {
            format!("at {name} = 2 the top acceptable node suppresses every entity")
        } else {
            format!(
                "at {name} = 2 the top acceptable node already suppresses {at_two} entities, more than {}",
                q.budget
            )
        });
    }
    Ok(exact(s, v_max, candidate, q.budget))
}

/// Relaxation of the levels (the spec's `RelaxLevels`): the lowest height over the whole
/// lattice with a node meeting k within the budget, found by binary search (some node of
/// height H meets it => some node of height H + 1 does, P4), then the best node there.
fn relax_levels(s: &mut Search, q: &Request) -> Result<Answer, String> {
    let heights = s.lattice.heights.clone();
    if q.max_levels == heights {
        return Err("every column may already reach its top level: no level to relax".into());
    }
    let top = s.lattice.index(&heights);
    if !s.meets(top, q.value, q.budget) {
        let floor = s.histogram(top).entities(q.value);
        return Err(format!(
            "even every column at its top level suppresses {floor} entities at {} = {}: the tree shapes alone (rows per table) leave them in classes too small",
            Relaxed::Value.name(q.measure),
            q.value
        ));
    }
    let by_height = nodes_by_height(&heights);
    // The lowest height of a node outside the top acceptable node's sublattice.
    let mut lo = q
        .max_levels
        .iter()
        .zip(&heights)
        .filter(|(m, h)| m < h)
        .map(|(&m, _)| m as usize + 1)
        .min()
        .expect("some column is below its top (checked above)");
    let mut hi = by_height.len() - 1;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if by_height[mid]
            .iter()
            .any(|&n| s.meets(n, q.value, q.budget))
        {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let meeting: Vec<usize> = by_height[lo]
        .iter()
        .copied()
        .filter(|&n| s.meets(n, q.value, q.budget))
        .collect();
    Ok(s.best(meeting, q.value)
        .expect("the binary search ends at a height with a meeting node (the top meets)"))
}

/// Node indices grouped by height (mixed radix as [`Annotated::index`]).
fn nodes_by_height(heights: &[u16]) -> Vec<Vec<usize>> {
    let total: usize = heights.iter().map(|&h| h as usize).sum();
    let size: usize = heights.iter().map(|&h| h as usize + 1).product();
    let mut out = vec![Vec::new(); total + 1];
    let mut levels = vec![0u16; heights.len()];
    for index in 0..size {
        out[levels.iter().map(|&l| l as usize).sum::<usize>()].push(index);
        for (l, &h) in levels.iter_mut().zip(heights) {
            if *l < h {
                *l += 1;
                break;
            }
            *l = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::kernel::annotate::{
        annotate,
        tests::{family, flat},
    };
    use crate::algo::kernel::lattice::Lattice;
    use crate::progress::Progress;

    /// Appendix A.1: the thesis's |QI| = 6 lattice (levels 5, 4, 3, 3, 5, 4) has 3,600 nodes,
    /// 396, 469, 496, 469, 396 of them at heights 7 to 11 (Fig. 4.9), 15,960 edges (l.1981).
    #[test]
    fn lattice_sizes_of_appendix_a() {
        let by = nodes_by_height(&[4, 3, 2, 2, 4, 3]);
        assert_eq!(by.iter().map(Vec::len).sum::<usize>(), 3600);
        let widths: Vec<usize> = by[7..=11].iter().map(Vec::len).collect();
        assert_eq!(widths, [396, 469, 496, 469, 396]);
        let edges: usize = [5usize, 4, 3, 3, 5, 4]
            .iter()
            .map(|&l| (l - 1) * 3600 / l)
            .sum();
        assert_eq!(edges, 15960);
        assert_eq!(
            nodes_by_height(&[4, 3, 2])
                .iter()
                .map(Vec::len)
                .sum::<usize>(),
            60
        );
    }

    /// At p = 100% the partial negotiation is the full one; at 10% every answer is a
    /// computed node meeting what it claims, never lower than the full lattice's answer.
    #[test]
    fn partial_answers_are_the_full_ones_at_every_node_and_never_better() {
        use crate::algo::kernel::partial::annotate_partial;
        for f in [flat(4, 40), family(4, 30)] {
            let lattice = Lattice::new(&f);
            let full = annotate(&lattice, false, &Progress::new());
            let all = annotate_partial(&lattice, false, 1.0, &Progress::new());
            let some = annotate_partial(&lattice, false, 0.1, &Progress::new());
            for v_max in 0..full.nodes() {
                for (value, budget) in [(2u32, 0u64), (3, 5), (5, 12)] {
                    let q = Request {
                        measure: Measure::Size,
                        value,
                        budget,
                        max_levels: full.levels(v_max),
                    };
                    let want = negotiate(&full, &q);
                    let got = negotiate_partial(&all, &q);
                    // The same answers (the reasons for none are worded for each).
                    let answers = |n: &Negotiation| -> Vec<Option<Answer>> {
                        n.relaxations
                            .iter()
                            .map(|r| r.answer.clone().ok())
                            .collect()
                    };
                    assert_eq!(
                        (&got.exact, answers(&got), &got.v_max),
                        (&want.exact, answers(&want), &want.v_max),
                        "{q:?}"
                    );
                    let part = negotiate_partial(&some, &q);
                    let answers = part.exact.iter().chain(
                        part.relaxations
                            .iter()
                            .filter_map(|r| r.answer.as_ref().ok()),
                    );
                    for a in answers {
                        let i = some.index(&a.levels);
                        assert!(some.is_computed(i));
                        assert_eq!(
                            full.size.get(i).suppressed(a.value),
                            a.suppressed.as_slice()
                        );
                    }
                    if let (Some(p), Some(w)) = (&part.exact, &want.exact) {
                        assert!(
                            (p.height, &p.suppressed) >= (w.height, &w.suppressed),
                            "{q:?}"
                        );
                    }
                    if part.exact.is_some() {
                        assert!(want.exact.is_some(), "{q:?}");
                    }
                    // v_max's suppression is exact or a lower bound.
                    assert!(part.v_max.suppressed[0] <= full.size.get(v_max).entities(value));
                }
            }
        }
    }

    /// Order O over answers, as the brute force applies it.
    fn best_of(
        a: &Annotated,
        m: Measure,
        nodes: impl Iterator<Item = usize>,
        value: u32,
    ) -> Option<Answer> {
        nodes
            .map(|i| {
                let levels = a.levels(i);
                Answer {
                    height: levels.iter().map(|&l| l as u32).sum(),
                    levels,
                    value,
                    suppressed: a
                        .histogram(m, i)
                        .expect("annotated")
                        .suppressed(value)
                        .to_vec(),
                }
            })
            .min_by(|x, y| {
                (x.height, &x.suppressed, &x.levels).cmp(&(y.height, &y.suppressed, &y.levels))
            })
    }

    /// Every answer against a brute force over all nodes: the exact answer is the best
    /// meeting node below v_max; relaxing suppression, the best below v_max within v_max's
    /// own suppression; relaxing k, the largest k' < k v_max meets; relaxing levels, the best
    /// meeting node anywhere.
    #[test]
    fn answers_match_brute_force() {
        let mut exact_seen = 0;
        let mut relaxed_seen = [0; 3];
        for f in [flat(3, 40), family(3, 40)] {
            let lattice = Lattice::new(&f);
            let a = annotate(&lattice, true, &Progress::new());
            let n = a.entities;
            let meets = |m: Measure, i: usize, v: u32, b: u64| {
                let e = a.histogram(m, i).expect("annotated").entities(v);
                e <= b && e < n
            };
            let below = |i: usize, h: &[u16]| a.levels(i).iter().zip(h).all(|(l, m)| l <= m);
            for measure in [Measure::Size, Measure::Distinct] {
                for v_max in 0..a.nodes() {
                    for value in [2u32, 3, 5] {
                        for budget in [0u64, 3, 10] {
                            let q = Request {
                                measure,
                                value,
                                budget,
                                max_levels: a.levels(v_max),
                            };
                            let got = negotiate(&a, &q);
                            let h = &q.max_levels;
                            if meets(measure, v_max, value, budget) {
                                let want = best_of(
                                    &a,
                                    measure,
                                    (0..a.nodes()).filter(|&i| {
                                        below(i, h) && meets(measure, i, value, budget)
                                    }),
                                    value,
                                );
                                assert_eq!(got.exact, want, "{q:?}");
                                exact_seen += 1;
                                continue;
                            }
                            assert_eq!(got.exact, None);
                            let least = a
                                .histogram(measure, v_max)
                                .expect("annotated")
                                .entities(value);
                            let r1 = best_of(
                                &a,
                                measure,
                                (0..a.nodes())
                                    .filter(|&i| below(i, h) && meets(measure, i, value, least)),
                                value,
                            );
                            assert_eq!(
                                got.relaxations[0].answer.as_ref().ok(),
                                r1.as_ref(),
                                "{q:?}"
                            );
                            let r2 = if *h == a.heights {
                                None
                            } else {
                                best_of(
                                    &a,
                                    measure,
                                    (0..a.nodes()).filter(|&i| meets(measure, i, value, budget)),
                                    value,
                                )
                            };
                            assert_eq!(
                                got.relaxations[1].answer.as_ref().ok(),
                                r2.as_ref(),
                                "{q:?}"
                            );
                            let kr = (2..value).rev().find(|&k| meets(measure, v_max, k, budget));
                            let r3 = kr.and_then(|k| {
                                best_of(
                                    &a,
                                    measure,
                                    (0..a.nodes())
                                        .filter(|&i| below(i, h) && meets(measure, i, k, budget)),
                                    k,
                                )
                            });
                            assert_eq!(
                                got.relaxations[2].answer.as_ref().ok(),
                                r3.as_ref(),
                                "{q:?}"
                            );
                            for (seen, r) in relaxed_seen.iter_mut().zip(&got.relaxations) {
                                *seen += r.answer.is_ok() as usize;
                            }
                        }
                    }
                }
            }
        }
        // The requests exercise every branch.
        assert!(
            exact_seen > 0 && relaxed_seen.iter().all(|&s| s > 0),
            "{exact_seen} {relaxed_seen:?}"
        );
    }
}
