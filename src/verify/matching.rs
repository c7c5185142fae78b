//! Maximum bipartite matching by augmenting paths (Kuhn), used to pair released rows of a
//! key-less table with the source rows they may come from. Release order carries no
//! information, so a greedy first-fit pairing could reject a truthful release.

/// `adj[l]` lists the right vertices left vertex `l` may be paired with. Returns, per left
/// vertex, its partner in one maximum matching.
pub(super) fn max_matching(adj: &[Vec<usize>], n_right: usize) -> Vec<Option<usize>> {
    let mut left_of: Vec<Option<usize>> = vec![None; n_right];
    let mut right_of: Vec<Option<usize>> = vec![None; adj.len()];
    // Visit stamps avoid clearing a visited array for every augmentation.
    let mut seen: Vec<usize> = vec![0; n_right];
    let mut stamp = 0;

    // A cheap greedy pass settles most vertices before any path search.
    for (l, edges) in adj.iter().enumerate() {
        if let Some(&r) = edges.iter().find(|&&r| left_of[r].is_none()) {
            left_of[r] = Some(l);
            right_of[l] = Some(r);
        }
    }

    for root in 0..adj.len() {
        if right_of[root].is_some() {
            continue;
        }
        stamp += 1;
        // Iterative DFS (a group may be large enough to overflow a recursive one): each
        // frame is a left vertex and the position of the next edge to try; the edge that
        // led deeper is the one just before that position.
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (l, pos) = *top;
            let Some(&r) = adj[l].get(pos) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            if seen[r] == stamp {
                continue;
            }
            seen[r] = stamp;
            match left_of[r] {
                Some(next) => stack.push((next, 0)),
                None => {
                    for &(fl, fpos) in &stack {
                        let fr = adj[fl][fpos - 1];
                        left_of[fr] = Some(fl);
                        right_of[fl] = Some(fr);
                    }
                    break;
                }
            }
        }
    }
    right_of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(m: &[Option<usize>]) -> usize {
        m.iter().flatten().count()
    }

    fn valid(adj: &[Vec<usize>], m: &[Option<usize>]) -> bool {
        let mut used = std::collections::HashSet::new();
        m.iter().enumerate().all(|(l, r)| match r {
            Some(r) => adj[l].contains(r) && used.insert(*r),
            None => true,
        })
    }

    #[test]
    fn augments_past_a_bad_greedy_choice() {
        // Greedy gives 0->0 and leaves 1 unmatched; the augmenting path fixes it.
        let adj = vec![vec![0, 1], vec![0]];
        let m = max_matching(&adj, 2);
        assert_eq!(m, vec![Some(1), Some(0)]);
    }

    #[test]
    fn long_augmenting_chain() {
        // l_i may take r_i or r_{i+1}; greedy takes r_i for all but the last, which only
        // fits r_0: the only perfect matching shifts everyone by one.
        let n = 2000;
        let mut adj: Vec<Vec<usize>> = (0..n - 1).map(|i| vec![i, i + 1]).collect();
        adj.push(vec![0]);
        let m = max_matching(&adj, n);
        assert_eq!(size(&m), n);
        assert!(valid(&adj, &m));
    }

    #[test]
    fn deficient_side_leaves_rows_unmatched() {
        let adj = vec![vec![0], vec![0], vec![]];
        let m = max_matching(&adj, 1);
        assert_eq!(size(&m), 1);
        assert!(valid(&adj, &m));
        assert_eq!(m[2], None);
    }
}
