//! The cheapest pairing of rows that no truthful pairing placed, for a hybrid release (seed
//! 003) of a key-less table: released classes ship their rows to source classes, each row
//! costing the QI cells its labels do not stand for, as a min-cost transportation problem.
//! Solved by successive shortest paths (a Bellman-Ford queue on the residual graph, whose
//! backward edges cost negative), which is exact; the problem is small by construction
//! (what is left of a key-less group after its truthful assignment, in classes).

use std::collections::VecDeque;

/// `units` rows of left class `left` paired with right class `right`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shipment {
    pub left: usize,
    pub right: usize,
    pub units: usize,
}

/// Ships as many units as can go from `supply` (left classes) to `capacity` (right classes)
/// at the least total cost; `cost[l * capacity.len() + r]` is None where `l` may not go to
/// `r`. Returns the shipments and their total cost.
pub(super) fn cheapest(
    supply: &[usize],
    capacity: &[usize],
    cost: &[Option<u32>],
) -> (Vec<Shipment>, u64) {
    let (nl, nr) = (supply.len(), capacity.len());
    debug_assert_eq!(cost.len(), nl * nr);
    let mut net = Residual {
        nl,
        nr,
        cost,
        left: supply.to_vec(),
        room: capacity.to_vec(),
        flow: vec![0; nl * nr],
    };
    while let Some(path) = net.shortest() {
        net.augment(&path);
    }
    let mut total = 0u64;
    let mut shipments = Vec::new();
    for l in 0..nl {
        for r in 0..nr {
            let units = net.flow[l * nr + r];
            if units > 0 {
                let c = cost[l * nr + r].expect("flow only runs on allowed edges");
                total += u64::from(c) * units as u64;
                shipments.push(Shipment {
                    left: l,
                    right: r,
                    units,
                });
            }
        }
    }
    (shipments, total)
}

/// The residual network: what each left class has left to send, each right class room for,
/// and the flow on each edge (a backward edge wherever it is positive).
struct Residual<'c> {
    nl: usize,
    nr: usize,
    cost: &'c [Option<u32>],
    left: Vec<usize>,
    room: Vec<usize>,
    flow: Vec<usize>,
}

/// A shortest path as its nodes from the end back to its start: left classes are
/// `0..nl`, right classes `nl..nl + nr`.
type Path = Vec<usize>;

impl Residual<'_> {
    /// The cheapest path from a left class with rows left to a right class with room, in
    /// the residual graph; None when no such path exists (the flow is maximum). Successive
    /// shortest paths keep the residual graph free of negative cycles, so the queue ends.
    fn shortest(&self) -> Option<Path> {
        let (nl, nr) = (self.nl, self.nr);
        let mut dist = vec![i64::MAX; nl + nr];
        let mut pred = vec![usize::MAX; nl + nr];
        let mut queued = vec![false; nl + nr];
        let mut queue = VecDeque::new();
        for l in (0..nl).filter(|&l| self.left[l] > 0) {
            dist[l] = 0;
            queued[l] = true;
            queue.push_back(l);
        }
        while let Some(v) = queue.pop_front() {
            queued[v] = false;
            let mut relax = |to: usize, d: i64, dist: &mut Vec<i64>| {
                if d < dist[to] {
                    dist[to] = d;
                    pred[to] = v;
                    if !queued[to] {
                        queued[to] = true;
                        queue.push_back(to);
                    }
                }
            };
            if v < nl {
                for r in 0..nr {
                    if let Some(c) = self.cost[v * nr + r] {
                        relax(nl + r, dist[v] + i64::from(c), &mut dist);
                    }
                }
            } else {
                let r = v - nl;
                for l in 0..nl {
                    if self.flow[l * nr + r] > 0 {
                        let c = self.cost[l * nr + r].expect("flow only runs on allowed edges");
                        relax(l, dist[v] - i64::from(c), &mut dist);
                    }
                }
            }
        }
        let end = (0..nr)
            .filter(|&r| self.room[r] > 0 && dist[nl + r] < i64::MAX)
            .min_by_key(|&r| (dist[nl + r], r))?;
        let mut path = vec![nl + end];
        let mut v = nl + end;
        while pred[v] != usize::MAX {
            v = pred[v];
            path.push(v);
        }
        Some(path)
    }

    /// Sends the most the path allows: the start's rows left, the end's room, and the flow
    /// of every backward edge on it.
    fn augment(&mut self, path: &Path) {
        let nr = self.nr;
        let nl = self.nl;
        let (end, start) = (path[0] - nl, path[path.len() - 1]);
        let mut units = self.room[end].min(self.left[start]);
        for w in path.windows(2) {
            // w[1] -> w[0]: forward (left to right) or backward (right to left).
            if w[1] >= nl {
                units = units.min(self.flow[w[0] * nr + (w[1] - nl)]);
            }
        }
        for w in path.windows(2) {
            if w[1] >= nl {
                self.flow[w[0] * nr + (w[1] - nl)] -= units;
            } else {
                self.flow[w[1] * nr + (w[0] - nl)] += units;
            }
        }
        self.room[end] -= units;
        self.left[start] -= units;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every assignment of the left rows (expanded) to a right class or nowhere: the most
    /// rows sent, and the least cost of sending that many.
    fn brute(supply: &[usize], capacity: &[usize], cost: &[Option<u32>]) -> (usize, u64) {
        let lefts: Vec<usize> = supply
            .iter()
            .enumerate()
            .flat_map(|(l, &n)| std::iter::repeat_n(l, n))
            .collect();
        let nr = capacity.len();
        let mut best = (0usize, 0u64);
        let combos = (nr + 1).pow(lefts.len() as u32);
        'combo: for mut code in 0..combos {
            let mut room = capacity.to_vec();
            let (mut sent, mut spent) = (0usize, 0u64);
            for &l in &lefts {
                let r = code % (nr + 1);
                code /= nr + 1;
                if r == nr {
                    continue;
                }
                let Some(c) = cost[l * nr + r] else {
                    continue 'combo;
                };
                if room[r] == 0 {
                    continue 'combo;
                }
                room[r] -= 1;
                sent += 1;
                spent += u64::from(c);
            }
            if sent > best.0 || (sent == best.0 && spent < best.1) {
                best = (sent, spent);
            }
        }
        best
    }

    #[test]
    fn a_cheap_first_choice_is_rerouted_when_it_costs_more_overall() {
        // Left 0 goes to either at cost 1; left 1 only to right 0 (cost 1) or right 1 (9).
        let cost = [Some(1), Some(1), Some(1), Some(9)];
        let (ships, total) = cheapest(&[1, 1], &[1, 1], &cost);
        assert_eq!(total, 2);
        assert_eq!(ships.iter().map(|s| s.units).sum::<usize>(), 2);
    }

    #[test]
    fn it_sends_the_most_first_then_at_the_least_cost_as_a_brute_force_does() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for _ in 0..200 {
            let nl = 1 + next(3) as usize;
            let nr = 1 + next(3) as usize;
            let supply: Vec<usize> = (0..nl).map(|_| next(3) as usize).collect();
            let capacity: Vec<usize> = (0..nr).map(|_| next(3) as usize).collect();
            let cost: Vec<Option<u32>> = (0..nl * nr)
                .map(|_| (next(4) > 0).then(|| next(5) as u32))
                .collect();
            let (ships, total) = cheapest(&supply, &capacity, &cost);
            let sent: usize = ships.iter().map(|s| s.units).sum();
            assert_eq!(
                (sent, total),
                brute(&supply, &capacity, &cost),
                "{supply:?} {capacity:?} {cost:?}"
            );
            for s in &ships {
                assert!(cost[s.left * nr + s.right].is_some());
            }
        }
    }
}
