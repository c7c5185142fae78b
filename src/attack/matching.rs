//! Facts to rows as a bipartite matching (Kuhn's augmenting paths).
//!
//! Two facts about one child table describe two different rows of the victim ("took Math" and
//! "took Physics" are two courses), so an entity is consistent with them only if its rows can
//! be assigned one per fact. Assigning greedily is wrong: a row that fits both facts may be
//! taken by the first while the second had no other choice. A maximum matching decides it
//! exactly; facts per table are few, so the simple O(facts * edges) algorithm is enough.

/// Whether every fact can have its own row. `adj[f]` lists the rows (`0..rows`) fact `f` may be.
pub(super) fn saturates(adj: &[Vec<usize>], rows: usize) -> bool {
    adj.len() <= rows && max_matching(adj, rows) == adj.len()
}

/// The rows fact `f` is matched to in at least one assignment that gives every fact its own
/// row: the rows that could be the one the fact describes.
pub(super) fn possible_rows(adj: &[Vec<usize>], rows: usize, f: usize) -> Vec<usize> {
    adj[f]
        .iter()
        .copied()
        .filter(|&r| {
            let others: Vec<Vec<usize>> = adj
                .iter()
                .enumerate()
                .filter(|&(g, _)| g != f)
                .map(|(_, a)| a.iter().copied().filter(|&x| x != r).collect())
                .collect();
            saturates(&others, rows)
        })
        .collect()
}

fn max_matching(adj: &[Vec<usize>], rows: usize) -> usize {
    let mut owner: Vec<Option<usize>> = vec![None; rows];
    let mut matched = 0;
    for f in 0..adj.len() {
        let mut seen = vec![false; rows];
        if augment(f, adj, &mut owner, &mut seen) {
            matched += 1;
        }
    }
    matched
}

/// Finds a row for fact `f`, moving earlier facts to other rows along an alternating path.
fn augment(f: usize, adj: &[Vec<usize>], owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for &r in &adj[f] {
        if seen[r] {
            continue;
        }
        seen[r] = true;
        let free = match owner[r] {
            None => true,
            Some(g) => augment(g, adj, owner, seen),
        };
        if free {
            owner[r] = Some(f);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greedy_choice_would_miss_the_assignment() {
        // Rows: 0 = 'Science' (fits "took Math" and "took Physics"), 1 = 'Physics'.
        // Fact 0 "Physics" lists row 0 first; a greedy pass gives it row 0 and leaves fact 1
        // "Math" without a row. The matching moves fact 0 to row 1.
        let adj = vec![vec![0, 1], vec![0]];
        assert!(saturates(&adj, 2));
        assert_eq!(possible_rows(&adj, 2, 0), vec![1]);
        assert_eq!(possible_rows(&adj, 2, 1), vec![0]);
    }

    #[test]
    fn two_facts_need_two_rows() {
        // "took Math" and "took CS" against one 'Science' row: each fits, both cannot.
        assert!(!saturates(&[vec![0], vec![0]], 1));
        assert!(!saturates(&[vec![0], vec![0]], 2));
        assert!(saturates(&[vec![0]], 1));
        // A fact no row fits.
        assert!(!saturates(&[vec![0, 1], vec![]], 2));
        // No facts: nothing to assign.
        assert!(saturates(&[], 0));
    }

    #[test]
    fn every_row_that_fits_some_full_assignment_is_possible() {
        // Three rows all fitting fact 0; fact 1 needs row 2.
        let adj = vec![vec![0, 1, 2], vec![2]];
        assert_eq!(possible_rows(&adj, 3, 0), vec![0, 1]);
        assert_eq!(possible_rows(&adj, 3, 1), vec![2]);
        // When the facts cannot all be placed, no row is possible.
        assert!(possible_rows(&[vec![0], vec![0]], 1, 0).is_empty());
    }
}
