//! TopDown's other start (beside the top-down orders): the cheapest cover. Beyond the seeds.
//!
//! Any group holding a row is released at a generalization of that row (one hierarchy node per
//! attribute, a box) covering at least k rows, so the cheapest such box bounds what the row
//! costs in any k-anonymous release from below (on UCI Adult at k = 10 these bounds average an
//! LM of 0.042). The cover opens boxes as cells in that spirit, cheapest first: a box opens when
//! at least k rows not yet in a cell lie under it, and takes them all. A row thus lands in the
//! cheapest box that still has k free rows to share it. Rows left when even the root has fewer
//! than k free rows go last. The cells, each of k or more rows, are sequenced by where their
//! rows stand in a top-down order (the median position), so that neighbours in the result are
//! alike as they are in a top-down order and refinement's searches among neighbours apply.
//!
//! Boxes are listed per distinct row in bands of LM' ([`BANDS`]), each band listing only the
//! rows still free, so the many costly boxes are listed for the few rows that need them. Any
//! schedule of bands opens the same cells: candidates are taken cheapest first within a band
//! and bands do not overlap, and a box with k free rows when it opens had them at its band's
//! start. A band that would list more than [`BUDGET_PER_ROW`] boxes per row (many attributes
//! with deep hierarchies) drops this start; TopDown keeps its others.

use super::Table;

/// The LM' bands boxes are listed in: the first is `[0, first)`, each next one ends `growth`
/// times further. Measured on UCI Adult: doubling listed 8.0 M boxes in one band at k = 10 and
/// peaked at 347 MiB at k = 50; 1.25 peaks at 118 MiB there, in about the same time (finer
/// bands walk the cheap boxes again for every band; 1.1 was slower).
const BANDS: Bands = Bands {
    first: 0.25,
    growth: 1.25,
};

/// Most (box, distinct row) pairs one band may list, per row of the table.
const BUDGET_PER_ROW: usize = 4096;

/// A schedule of LM' bands (see [`BANDS`]).
#[derive(Clone, Copy)]
struct Bands {
    first: f64,
    growth: f64,
}

/// The table's rows in the cover's order: its cells sequenced by the median position of their
/// rows in `top_down` (a top-down order of all rows), then the rows no cell took, in that
/// order. `None` when a band would list too many boxes or the boxes cannot be numbered in 64
/// bits.
pub(super) fn cover_order(t: &Table, k: usize, top_down: &[u32]) -> Option<Vec<u32>> {
    let cover = cells(t, k, BANDS, BUDGET_PER_ROW.saturating_mul(t.n).max(1 << 16))?;
    let mut position = vec![0u32; t.n];
    for (i, &r) in top_down.iter().enumerate() {
        position[r as usize] = i as u32;
    }
    let mut sequenced = cover.cells;
    // Stable: cells with the same median keep the order they opened in.
    sequenced.sort_by_cached_key(|rows| {
        let mut at: Vec<u32> = rows.iter().map(|&r| position[r as usize]).collect();
        at.sort_unstable();
        at[at.len() / 2]
    });
    let mut rest = cover.rest;
    rest.sort_by_key(|&r| position[r as usize]);
    let mut order: Vec<u32> = sequenced.into_iter().flatten().collect();
    order.extend(rest);
    Some(order)
}

/// What the cover opened: cells (rows, in the order of their QI codes) in the order they
/// opened, and the rows no cell took.
struct Cover {
    cells: Vec<Vec<u32>>,
    rest: Vec<u32>,
}

/// The cover of `t` at `k`, listing boxes in `bands`, at most `budget` (box, distinct row)
/// pairs a band.
fn cells(t: &Table, k: usize, bands: Bands, budget: usize) -> Option<Cover> {
    let lattice = Lattice::new(t)?;
    let distinct = distinct_rows(t);
    let size: Vec<usize> = distinct.iter().map(Vec::len).collect();
    let mut taken = vec![false; distinct.len()];
    let mut opened: Vec<Vec<usize>> = Vec::new();
    let mut entries: Vec<(u64, u32)> = Vec::new();
    let (mut lo, mut hi) = (0.0, bands.first);
    loop {
        let last = hi > lattice.max_loss;
        let band = (lo, if last { f64::INFINITY } else { hi });
        entries.clear();
        for (d, rows) in distinct.iter().enumerate() {
            if taken[d] {
                continue;
            }
            lattice.boxes(t.row(rows[0]), band, &mut |key| {
                entries.push((key, d as u32))
            });
            if entries.len() > budget {
                return None;
            }
        }
        open_cells(&lattice, &mut entries, &size, k, &mut taken, &mut opened);
        if last {
            break;
        }
        (lo, hi) = (hi, hi * bands.growth);
    }
    let cells = opened
        .into_iter()
        .map(|members| {
            members
                .iter()
                .flat_map(|&d| distinct[d].iter().copied())
                .collect()
        })
        .collect();
    let rest = distinct
        .iter()
        .zip(&taken)
        .filter(|(_, &taken)| !taken)
        .flat_map(|(rows, _)| rows.iter().copied())
        .collect();
    Some(Cover { cells, rest })
}

/// The table's rows grouped by equal QI codes, groups in the order of their codes.
fn distinct_rows(t: &Table) -> Vec<Vec<u32>> {
    let mut rows: Vec<u32> = (0..t.n as u32).collect();
    rows.sort_by(|&a, &b| t.row(a).cmp(t.row(b)).then(a.cmp(&b)));
    let mut out: Vec<Vec<u32>> = Vec::new();
    for r in rows {
        match out.last_mut() {
            Some(g) if t.row(g[0]) == t.row(r) => g.push(r),
            _ => out.push(vec![r]),
        }
    }
    out
}

/// Opens the cells of one band: `entries` (box, distinct row) grouped by box, the boxes over
/// at least k rows taken cheapest first (ties by number), each opening, with all its free
/// rows, when at least k of its rows are still free.
fn open_cells(
    lattice: &Lattice,
    entries: &mut [(u64, u32)],
    size: &[usize],
    k: usize,
    taken: &mut [bool],
    opened: &mut Vec<Vec<usize>>,
) {
    entries.sort_unstable();
    let mut candidates: Vec<(f64, u64, usize, usize)> = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let key = entries[start].0;
        let mut end = start;
        let mut rows = 0;
        while end < entries.len() && entries[end].0 == key {
            rows += size[entries[end].1 as usize];
            end += 1;
        }
        if rows >= k {
            candidates.push((lattice.loss(key), key, start, end));
        }
        start = end;
    }
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, _, start, end) in candidates {
        let free: Vec<usize> = entries[start..end]
            .iter()
            .map(|&(_, d)| d as usize)
            .filter(|&d| !taken[d])
            .collect();
        if free.iter().map(|&d| size[d]).sum::<usize>() < k {
            continue;
        }
        for &d in &free {
            taken[d] = true;
        }
        opened.push(free);
    }
}

/// The product of the QI hierarchies: a box numbered in mixed radix, one digit per attribute
/// (its hierarchy node).
struct Lattice<'t, 'a> {
    t: &'t Table<'a>,
    radix: Vec<u64>,
    /// LM' of the root box.
    max_loss: f64,
}

impl<'t, 'a> Lattice<'t, 'a> {
    fn new(t: &'t Table<'a>) -> Option<Lattice<'t, 'a>> {
        let mut radix = Vec::with_capacity(t.nqi);
        let mut place: u64 = 1;
        for d in &t.dghs {
            radix.push(place);
            place = place.checked_mul(d.h.len() as u64)?;
        }
        let max_loss = t.dghs.iter().map(|d| d.loss[d.h.root() as usize]).sum();
        Some(Lattice { t, radix, max_loss })
    }

    fn code(&self, key: u64, q: usize) -> u32 {
        ((key / self.radix[q]) % self.t.dghs[q].h.len() as u64) as u32
    }

    /// LM' of one row released as box `key`, summed in attribute order (as
    /// [`Lattice::boxes`] sums it, so a box falls in exactly one band).
    fn loss(&self, key: u64) -> f64 {
        (0..self.t.nqi).fold(0.0, |acc, q| {
            acc + self.t.dghs[q].loss[self.code(key, q) as usize]
        })
    }

    /// Calls `emit` with every box over `row` (leaf codes) whose LM' lies in `[lo, hi)`.
    fn boxes(&self, row: &[u32], (lo, hi): (f64, f64), emit: &mut impl FnMut(u64)) {
        self.walk(row, 0, 0, 0.0, (lo, hi), emit);
    }

    /// One attribute of [`Lattice::boxes`]: its node rises from the row's leaf while the LM'
    /// so far stays under `hi` (an ancestor never loses less, so the rest of the climb is cut).
    fn walk(
        &self,
        row: &[u32],
        q: usize,
        key: u64,
        loss: f64,
        band: (f64, f64),
        emit: &mut impl FnMut(u64),
    ) {
        if q == row.len() {
            if loss >= band.0 {
                emit(key);
            }
            return;
        }
        let d = &self.t.dghs[q];
        let root = d.h.root();
        let mut c = row[q];
        loop {
            let l = loss + d.loss[c as usize];
            if l >= band.1 {
                return;
            }
            self.walk(row, q + 1, key + c as u64 * self.radix[q], l, band, emit);
            if c == root {
                return;
            }
            c = d.h.parent(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{forest, rows};
    use super::super::top_down_order;
    use super::*;
    use crate::progress::Progress;

    /// Cells as sets of rows (sorted), in the order they opened, and the rest sorted.
    fn opened(c: &Cover) -> (Vec<Vec<u32>>, Vec<u32>) {
        let mut cells = c.cells.clone();
        for cell in &mut cells {
            cell.sort_unstable();
        }
        let mut rest = c.rest.clone();
        rest.sort_unstable();
        (cells, rest)
    }

    #[test]
    fn boxes_open_cheapest_first_with_all_their_free_rows() {
        // Ages 20..39 (bands of 5 and 10), jobs in two families (a family costs 1/3).
        // Rows 0-2 share a box of LM' 0. Rows 3-5: (22, nurse) holds two, [20-24] x nurse
        // (LM' 4/19) two free ones after rows 0-2 left, and (22, care) (LM' 1/3) all three.
        // Row 6 is alone: even the root holds only it once the others are taken.
        let f = forest(&[
            (21, "nurse"),
            (21, "nurse"),
            (21, "nurse"),
            (22, "nurse"),
            (22, "doctor"),
            (22, "nurse"),
            (38, "welder"),
        ]);
        let t = Table::new(&f.tables[0]);
        let c = cells(&t, 3, BANDS, usize::MAX).expect("two attributes number in 64 bits");
        assert_eq!(opened(&c), (vec![vec![0, 1, 2], vec![3, 4, 5]], vec![6]));
        // The order: cells along the top-down order, the lone row last.
        let top_down = top_down_order(&t, (0..7).collect(), 3, &Progress::new());
        let order = cover_order(&t, 3, &top_down).expect("within budget");
        assert_eq!(order.len(), 7);
        assert_eq!(order[6], 6);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..7).collect::<Vec<u32>>());
    }

    #[test]
    fn every_band_schedule_opens_the_same_cells() {
        let f = forest(&rows(120));
        let t = Table::new(&f.tables[0]);
        for k in [2, 3, 5, 8] {
            let reference = cells(&t, k, BANDS, usize::MAX).expect("cover");
            let reference = opened(&reference);
            assert!(reference.0.iter().all(|c| c.len() >= k));
            let placed: usize = reference.0.iter().map(Vec::len).sum();
            assert_eq!(placed + reference.1.len(), 120);
            for (first, growth) in [(0.25, 2.0), (0.05, 1.1), (10.0, 2.0), (0.5, 3.0)] {
                let other = cells(&t, k, Bands { first, growth }, usize::MAX).expect("cover");
                assert_eq!(
                    opened(&other),
                    reference,
                    "k = {k}, bands {first} x {growth}"
                );
            }
        }
    }

    #[test]
    fn a_band_over_the_budget_drops_the_start() {
        let f = forest(&rows(60));
        let t = Table::new(&f.tables[0]);
        assert!(cells(&t, 4, BANDS, 10).is_none());
        assert!(cells(&t, 4, BANDS, usize::MAX).is_some());
    }
}
