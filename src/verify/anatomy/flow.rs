//! A maximum flow (Dinic's algorithm) over a small network with integer capacities, for the
//! SA truthfulness check's choice among rows the QI side cannot tell apart
//! ([`super::sa_truth`]): how many rows at each slot take each source value, within what the
//! slot publishes and what the rows' sources hold.

use std::collections::VecDeque;

/// A network of `n` nodes; edges are added in pairs (forward, residual).
pub(super) struct Network {
    adj: Vec<Vec<usize>>,
    to: Vec<usize>,
    cap: Vec<u64>,
}

impl Network {
    pub(super) fn new(n: usize) -> Network {
        Network {
            adj: vec![Vec::new(); n],
            to: Vec::new(),
            cap: Vec::new(),
        }
    }

    /// Adds an edge `from -> to` of capacity `cap`; returns its id, whose [`Network::flow`]
    /// is read after [`Network::max_flow`].
    pub(super) fn edge(&mut self, from: usize, to: usize, cap: u64) -> usize {
        let id = self.to.len();
        self.adj[from].push(id);
        self.to.push(to);
        self.cap.push(cap);
        self.adj[to].push(id + 1);
        self.to.push(from);
        self.cap.push(0);
        id
    }

    /// The flow an edge carries: what its residual twin holds.
    pub(super) fn flow(&self, id: usize) -> u64 {
        self.cap[id ^ 1]
    }

    /// Pushes as much as possible from `s` to `t`; returns how much.
    pub(super) fn max_flow(&mut self, s: usize, t: usize) -> u64 {
        let n = self.adj.len();
        let mut total = 0;
        loop {
            // Levels by breadth-first search over edges with room.
            let mut level = vec![usize::MAX; n];
            level[s] = 0;
            let mut queue = VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                for &e in &self.adj[u] {
                    let v = self.to[e];
                    if self.cap[e] > 0 && level[v] == usize::MAX {
                        level[v] = level[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            if level[t] == usize::MAX {
                return total;
            }
            let mut next = vec![0usize; n];
            loop {
                let pushed = self.push(s, t, u64::MAX, &level, &mut next);
                if pushed == 0 {
                    break;
                }
                total += pushed;
            }
        }
    }

    /// One blocking-flow path from `u`, depth-first along increasing levels, with an explicit
    /// stack (a long path must not overflow the call stack).
    fn push(&mut self, s: usize, t: usize, limit: u64, level: &[usize], next: &mut [usize]) -> u64 {
        let mut path: Vec<usize> = Vec::new();
        let mut u = s;
        loop {
            if u == t {
                let pushed = path.iter().fold(limit, |m, &e| m.min(self.cap[e]));
                for &e in &path {
                    self.cap[e] -= pushed;
                    self.cap[e ^ 1] += pushed;
                }
                return pushed;
            }
            let mut advanced = false;
            while next[u] < self.adj[u].len() {
                let e = self.adj[u][next[u]];
                let v = self.to[e];
                if self.cap[e] > 0 && level[v] == level[u] + 1 {
                    path.push(e);
                    u = v;
                    advanced = true;
                    break;
                }
                next[u] += 1;
            }
            if advanced {
                continue;
            }
            // A dead end: retreat, and never try the edge that led here again this phase.
            let Some(e) = path.pop() else {
                return 0;
            };
            u = self.to[e ^ 1];
            next[u] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_maximum_through_a_detour() {
        // Greedy s-a-d-t would block b's only way out; the maximum reroutes a through c.
        let (s, a, b, c, d, t) = (0, 1, 2, 3, 4, 5);
        let mut n = Network::new(6);
        n.edge(s, a, 1);
        n.edge(s, b, 1);
        let ad = n.edge(a, d, 1);
        let ac = n.edge(a, c, 1);
        n.edge(b, d, 1);
        n.edge(c, t, 1);
        n.edge(d, t, 1);
        assert_eq!(n.max_flow(s, t), 2);
        assert_eq!((n.flow(ad), n.flow(ac)), (0, 1));
    }
}
