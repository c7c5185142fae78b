//! Pairing released rows of a key-less table with the source rows they may come from, as a
//! maximum assignment over *classes* of interchangeable rows: released rows with the same
//! cells are one left class (its size is its supply), source rows with the same values one
//! right class (its size its capacity). A single table such as UCI Adult is one group of
//! 30,000 rows whose generalized labels each fit thousands of source rows: the candidate
//! lists of all classes hold millions of edges, so they are asked for lazily, only for the
//! classes an augmenting-path search reaches. Release order carries no information, so a
//! greedy first-fit pairing alone could reject a truthful release.

/// Augments `flows` (per left class, (right class, units); within `supply` and `capacity`)
/// to a maximum assignment by breadth-first augmenting paths, one unit at a time, from
/// every left class short of its supply. `candidates(l)` lists the right classes left class
/// `l` may use; it is asked at most once per class, and only for classes a search reaches.
/// Returns, per left class, whether it was asked and had no candidate at all.
///
/// A search that fails leaves the assignment unchanged, and the classes it reached stay
/// unable to augment until an augmentation succeeds (Berge), so their marks are kept: a run
/// of failing searches costs one traversal in all, not one each.
pub(super) fn complete(
    supply: &[usize],
    capacity: &[usize],
    flows: &mut [Vec<(usize, usize)>],
    candidates: &mut dyn FnMut(usize) -> Vec<usize>,
) -> Vec<bool> {
    let (nl, nr) = (supply.len(), capacity.len());
    let mut free: Vec<usize> = capacity.to_vec();
    // Which left classes use each right class, and how many units.
    let mut users: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nr];
    for (l, fl) in flows.iter().enumerate() {
        for &(r, units) in fl {
            free[r] -= units;
            users[r].push((l, units));
        }
    }
    let mut cache: Vec<Option<Vec<usize>>> = vec![None; nl];
    let mut no_candidate = vec![false; nl];
    // Visit marks: a class is reached in the current epoch iff its stamp equals `epoch`.
    let mut epoch = 1usize;
    let mut left_seen = vec![0usize; nl];
    let mut right_seen = vec![0usize; nr];
    // How the search reached each class: a right class from a left one, a left class
    // through a right class it uses.
    let mut right_from = vec![0usize; nr];
    let mut left_via = vec![usize::MAX; nl];
    for start in 0..nl {
        loop {
            let sent: usize = flows[start].iter().map(|&(_, u)| u).sum();
            if sent >= supply[start] || left_seen[start] == epoch {
                break;
            }
            left_seen[start] = epoch;
            left_via[start] = usize::MAX;
            let mut queue = std::collections::VecDeque::from([start]);
            let mut found = None;
            'search: while let Some(l) = queue.pop_front() {
                let list = cache[l].get_or_insert_with(|| candidates(l));
                if l == start && list.is_empty() {
                    no_candidate[start] = true;
                }
                for &r in list.iter() {
                    if r >= nr || right_seen[r] == epoch {
                        continue;
                    }
                    right_seen[r] = epoch;
                    right_from[r] = l;
                    if free[r] > 0 {
                        found = Some(r);
                        break 'search;
                    }
                    for &(user, units) in &users[r] {
                        if units > 0 && left_seen[user] != epoch {
                            left_seen[user] = epoch;
                            left_via[user] = r;
                            queue.push_back(user);
                        }
                    }
                }
            }
            let Some(mut r) = found else {
                break;
            };
            // Walk back: each left class on the path takes a unit of the right class ahead
            // of it and gives one back to the right class it was reached through.
            free[r] -= 1;
            loop {
                let l = right_from[r];
                shift(&mut flows[l], &mut users[r], l, r, 1);
                let back = left_via[l];
                if back == usize::MAX {
                    break;
                }
                shift(&mut flows[l], &mut users[back], l, back, -1);
                r = back;
            }
            epoch += 1;
        }
    }
    no_candidate
}

/// Adds `delta` units to left class `l`'s use of right class `r`, in both indexes.
fn shift(
    flow: &mut Vec<(usize, usize)>,
    users: &mut Vec<(usize, usize)>,
    l: usize,
    r: usize,
    delta: isize,
) {
    fn bump(list: &mut Vec<(usize, usize)>, key: usize, delta: isize) {
        match list.iter().position(|&(k, _)| k == key) {
            Some(i) => {
                list[i].1 = list[i].1.saturating_add_signed(delta);
                if list[i].1 == 0 {
                    list.swap_remove(i);
                }
            }
            None => list.push((key, delta.max(0).unsigned_abs())),
        }
    }
    bump(flow, r, delta);
    bump(users, l, delta);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completes `initial` over the fixed lists `adj`.
    fn run(
        adj: &[Vec<usize>],
        supply: &[usize],
        cap: &[usize],
        initial: Vec<Vec<(usize, usize)>>,
    ) -> (Vec<Vec<(usize, usize)>>, Vec<bool>) {
        let mut flows = initial;
        let mut asked = vec![0; adj.len()];
        let none = complete(supply, cap, &mut flows, &mut |l| {
            asked[l] += 1;
            adj[l].clone()
        });
        assert!(asked.iter().all(|&n| n <= 1), "asked twice: {asked:?}");
        for f in &mut flows {
            f.sort_unstable();
        }
        (flows, none)
    }

    /// Units assigned in all.
    fn size(a: &[Vec<(usize, usize)>]) -> usize {
        a.iter().flatten().map(|&(_, f)| f).sum()
    }

    /// Only allowed edges, no left class over its supply, no right class over capacity.
    fn valid(
        adj: &[Vec<usize>],
        supply: &[usize],
        cap: &[usize],
        a: &[Vec<(usize, usize)>],
    ) -> bool {
        let mut used = vec![0; cap.len()];
        a.iter().enumerate().all(|(l, flows)| {
            let sent: usize = flows.iter().map(|&(_, f)| f).sum();
            flows.iter().all(|&(r, f)| {
                used[r] += f;
                adj[l].contains(&r)
            }) && sent <= supply[l]
        }) && used.iter().zip(cap).all(|(u, c)| u <= c)
    }

    fn ones(n: usize) -> Vec<usize> {
        vec![1; n]
    }

    fn empty(n: usize) -> Vec<Vec<(usize, usize)>> {
        vec![Vec::new(); n]
    }

    #[test]
    fn augments_past_a_bad_greedy_choice() {
        // The greedy choice 0->0 leaves 1 unassigned; the augmenting path fixes it.
        let adj = vec![vec![0, 1], vec![0]];
        let (a, _) = run(&adj, &ones(2), &ones(2), vec![vec![(0, 1)], vec![]]);
        assert_eq!(a, vec![vec![(1, 1)], vec![(0, 1)]]);
    }

    #[test]
    fn long_augmenting_chain() {
        // l_i may take r_i or r_{i+1}; a greedy start gives l_i r_i for all but the last,
        // which only fits r_0: the only perfect matching shifts everyone by one.
        let n = 2000;
        let mut adj: Vec<Vec<usize>> = (0..n - 1).map(|i| vec![i, i + 1]).collect();
        adj.push(vec![0]);
        let mut greedy: Vec<Vec<(usize, usize)>> = (0..n - 1).map(|i| vec![(i, 1)]).collect();
        greedy.push(Vec::new());
        let (a, _) = run(&adj, &ones(n), &ones(n), greedy);
        assert_eq!(size(&a), n);
        assert!(valid(&adj, &ones(n), &ones(n), &a));
        let (a, _) = run(&adj, &ones(n), &ones(n), empty(n));
        assert_eq!(size(&a), n, "from nothing, too");
    }

    #[test]
    fn deficient_side_leaves_units_unassigned_and_names_classes_without_candidates() {
        let adj = vec![vec![0], vec![0], vec![]];
        let (a, none) = run(&adj, &ones(3), &ones(1), empty(3));
        assert_eq!(size(&a), 1);
        assert!(valid(&adj, &ones(3), &ones(1), &a));
        assert_eq!(none, vec![false, false, true]);
    }

    #[test]
    fn classes_split_over_several_right_classes() {
        // A generalized class of 4 fits two source classes of 3; a leaf class of 2 fits only
        // the first. The greedy start sends 3 + 1 of the big class and strands the leaf
        // class; the only complete assignment sends 1 + 3 and 2.
        let adj = vec![vec![0, 1], vec![0]];
        let (supply, cap) = (vec![4, 2], vec![3, 3]);
        let (a, _) = run(&adj, &supply, &cap, vec![vec![(0, 3), (1, 1)], vec![]]);
        assert_eq!(a, vec![vec![(0, 1), (1, 3)], vec![(0, 2)]]);
        assert!(valid(&adj, &supply, &cap, &a));
    }

    #[test]
    fn a_perfect_transport_is_found_when_one_exists() {
        // Three classes of 10 over three source classes whose capacities only add up in
        // one way: the last left class fits only the last right class.
        let adj = vec![vec![0, 1, 2], vec![0, 1], vec![2]];
        let (supply, cap) = (vec![10, 10, 10], vec![8, 12, 10]);
        let (a, _) = run(
            &adj,
            &supply,
            &cap,
            vec![vec![(2, 10)], vec![(0, 8), (1, 2)], vec![]],
        );
        assert_eq!(size(&a), 30);
        assert!(valid(&adj, &supply, &cap, &a));
    }

    #[test]
    fn failing_searches_do_not_block_a_later_success() {
        // Classes 0 and 1 compete for right class 0 (capacity 1) and fail once it is taken;
        // class 2 still finds its own right class.
        let adj = vec![vec![0], vec![0], vec![0, 1], vec![0]];
        let (a, none) = run(&adj, &ones(4), &ones(2), empty(4));
        assert_eq!(size(&a), 2);
        assert!(valid(&adj, &ones(4), &ones(2), &a));
        assert_eq!(none, vec![false; 4]);
    }
}
