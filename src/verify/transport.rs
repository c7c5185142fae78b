//! The cheapest pairing of rows that no truthful pairing placed, for a hybrid release (seed
//! 003) of a key-less table: released classes ship their rows to source classes, each row
//! costing the QI cells its labels do not stand for, as a min-cost transportation problem.
//! Solved by the primal-dual method (successive shortest paths in phases: Dijkstra on costs
//! reduced by node potentials, then a blocking flow over every path of that least cost), which
//! is exact; costs are a few cells, so the phases are few whatever the number of rows.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
    let mut net = Network::new(supply, capacity, cost);
    while net.reprice() {
        net.block();
    }
    let mut total = 0u64;
    let mut shipments = Vec::new();
    for &(e, l, r) in &net.pairs {
        // The flow on a pair is what its backward edge can return.
        let units = net.edges[e ^ 1].cap;
        if units > 0 {
            let c = cost[l * nr + r].expect("pairs are built on allowed edges only");
            total += u64::from(c) * units as u64;
            shipments.push(Shipment {
                left: l,
                right: r,
                units,
            });
        }
    }
    (shipments, total)
}

/// An edge of the residual network; edges come in pairs, `e ^ 1` the reverse of `e`.
#[derive(Debug, Clone, Copy)]
struct Edge {
    to: usize,
    cap: usize,
    cost: i64,
}

/// The flow network: a source (node 0) feeding each left class its supply, left classes
/// `1..=nl`, right classes after them, each draining its capacity into the sink (last).
struct Network {
    edges: Vec<Edge>,
    out: Vec<Vec<usize>>,
    /// Each pair's forward edge, with its left and right class.
    pairs: Vec<(usize, usize, usize)>,
    /// Node potentials: every residual edge's reduced cost `cost + pot[from] - pot[to]` stays
    /// non-negative, so Dijkstra finds shortest paths despite backward edges' negative costs.
    pot: Vec<i64>,
    /// Breadth-first levels over the edges of reduced cost 0 (the blocking flow's).
    level: Vec<u32>,
    /// Per node, the next edge of `out` the blocking flow may still use.
    next: Vec<usize>,
}

const UNREACHED: i64 = i64::MAX;

impl Network {
    fn new(supply: &[usize], capacity: &[usize], cost: &[Option<u32>]) -> Network {
        let (nl, nr) = (supply.len(), capacity.len());
        let nodes = nl + nr + 2;
        let mut net = Network {
            edges: Vec::new(),
            out: vec![Vec::new(); nodes],
            pairs: Vec::new(),
            pot: vec![0; nodes],
            level: vec![0; nodes],
            next: vec![0; nodes],
        };
        let sink = nodes - 1;
        for (l, &n) in supply.iter().enumerate() {
            net.add(0, 1 + l, n, 0);
        }
        for l in 0..nl {
            for r in 0..nr {
                if let Some(c) = cost[l * nr + r] {
                    let e = net.add(1 + l, 1 + nl + r, usize::MAX, i64::from(c));
                    net.pairs.push((e, l, r));
                }
            }
        }
        for (r, &n) in capacity.iter().enumerate() {
            net.add(1 + nl + r, sink, n, 0);
        }
        net
    }

    fn add(&mut self, from: usize, to: usize, cap: usize, cost: i64) -> usize {
        let e = self.edges.len();
        self.edges.push(Edge { to, cap, cost });
        self.edges.push(Edge {
            to: from,
            cap: 0,
            cost: -cost,
        });
        self.out[from].push(e);
        self.out[to].push(e + 1);
        e
    }

    fn reduced(&self, from: usize, e: usize) -> i64 {
        let edge = &self.edges[e];
        edge.cost + self.pot[from] - self.pot[edge.to]
    }

    /// Dijkstra from the source on reduced costs, then each reached node's potential raised
    /// by its distance, so that every shortest path is made of edges of reduced cost 0. False
    /// where the sink is out of reach (the flow is maximum). A node out of reach now stays so:
    /// new residual edges only reverse edges of paths, between reached nodes.
    fn reprice(&mut self) -> bool {
        let nodes = self.out.len();
        let mut dist = vec![UNREACHED; nodes];
        let mut heap = BinaryHeap::new();
        dist[0] = 0;
        heap.push(Reverse((0i64, 0usize)));
        while let Some(Reverse((d, v))) = heap.pop() {
            if d > dist[v] {
                continue;
            }
            for &e in &self.out[v] {
                if self.edges[e].cap == 0 {
                    continue;
                }
                let to = self.edges[e].to;
                let nd = d + self.reduced(v, e);
                if nd < dist[to] {
                    dist[to] = nd;
                    heap.push(Reverse((nd, to)));
                }
            }
        }
        if dist[nodes - 1] == UNREACHED {
            return false;
        }
        for (p, d) in self.pot.iter_mut().zip(&dist) {
            if *d != UNREACHED {
                *p += d;
            }
        }
        true
    }

    /// An edge the current phase may use: room left, and on a shortest path.
    fn admissible(&self, from: usize, e: usize) -> bool {
        self.edges[e].cap > 0 && self.reduced(from, e) == 0
    }

    /// Dinic's blocking flows over the admissible edges until the sink is cut off from them:
    /// every unit sent goes along a path of the phase's least cost.
    fn block(&mut self) {
        let sink = self.out.len() - 1;
        while self.levels(sink) {
            self.next.iter_mut().for_each(|n| *n = 0);
            while self.push(0, sink, usize::MAX) > 0 {}
        }
    }

    /// Breadth-first levels from the source over admissible edges; whether the sink is
    /// reached.
    fn levels(&mut self, sink: usize) -> bool {
        self.level.iter_mut().for_each(|l| *l = u32::MAX);
        self.level[0] = 0;
        let mut queue = VecDeque::from([0usize]);
        while let Some(v) = queue.pop_front() {
            for i in 0..self.out[v].len() {
                let e = self.out[v][i];
                let to = self.edges[e].to;
                if self.level[to] == u32::MAX && self.admissible(v, e) {
                    self.level[to] = self.level[v] + 1;
                    queue.push_back(to);
                }
            }
        }
        self.level[sink] != u32::MAX
    }

    /// Sends up to `most` units from `v` to the sink along admissible edges one level up
    /// each; what was sent. The depth is at most the number of nodes.
    fn push(&mut self, v: usize, sink: usize, most: usize) -> usize {
        if v == sink {
            return most;
        }
        while self.next[v] < self.out[v].len() {
            let e = self.out[v][self.next[v]];
            let to = self.edges[e].to;
            if self.level[to] == self.level[v] + 1 && self.admissible(v, e) {
                let sent = self.push(to, sink, most.min(self.edges[e].cap));
                if sent > 0 {
                    self.edges[e].cap -= sent;
                    self.edges[e ^ 1].cap += sent;
                    return sent;
                }
            }
            self.next[v] += 1;
        }
        0
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
