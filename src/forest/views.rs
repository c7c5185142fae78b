//! Views of a loaded forest for the algorithms that anonymize a part of it: a projection onto
//! some QI columns (what a vertical fragment anonymizes, 004) and the forest of some entities
//! (what a shard anonymizes). Neither reads the warehouse again: a projection shares the
//! source rows (Arrow arrays are reference-counted) and lays out only the codes anew; a
//! subset takes its entities' rows and renumbers them, keeping their order.

use arrow::array::{RecordBatchOptions, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::record_batch::RecordBatch;

use super::{group_children, Forest, ForestError, TableNodes};
use crate::sensitive::SensitiveColumn;

impl Forest {
    /// The forest seen through some of its QI columns: `keep[t]` lists table `t`'s QI
    /// columns kept (indices in `FamilyTable::qi_columns` order), in the order given. Rows,
    /// links, sensitive columns and the source rows are the forest's own.
    pub fn project(&self, keep: &[Vec<usize>]) -> Result<Forest, ForestError> {
        if keep.len() != self.tables.len() {
            return Err(ForestError::Internal(format!(
                "a projection names the QI columns of {} tables, the forest has {}",
                keep.len(),
                self.tables.len()
            )));
        }
        let tables = self
            .tables
            .iter()
            .zip(keep)
            .map(|(t, cols)| project_table(t, cols))
            .collect::<Result<_, _>>()?;
        Ok(Forest { tables })
    }

    /// The forest of `entities` (entity-table rows, ascending, each once) and every row
    /// below them, renumbered in their order here; with, per table, the row of this forest
    /// each new row is. Counts of rows the load left out stay with the whole forest: a
    /// subset's are 0, and its `rows_in` is its own row count.
    pub fn subset(&self, entities: &[u32]) -> Result<(Forest, Vec<Vec<u32>>), ForestError> {
        if entities.windows(2).any(|w| w[0] >= w[1])
            || entities
                .last()
                .is_some_and(|&e| e as usize >= self.entities())
        {
            return Err(ForestError::Internal(
                "a subset's entities must be rows of the entity table, ascending, each once"
                    .to_string(),
            ));
        }
        let rows = self.rows_below(entities);
        let mut tables = Vec::with_capacity(self.tables.len());
        for (t, nodes) in self.tables.iter().enumerate() {
            tables.push(subset_table(self, t, nodes, &rows)?);
        }
        for t in 0..tables.len() {
            for c in self.tables[t].children.iter().map(|g| g.table) {
                let grouped = group_children(tables[t].rows(), &tables[c].parent, c);
                tables[t].children.push(grouped);
            }
        }
        Ok((Forest { tables }, rows))
    }

    /// Per table, the rows under `entities`, ascending (parents precede children).
    fn rows_below(&self, entities: &[u32]) -> Vec<Vec<u32>> {
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.tables.len()];
        rows[0] = entities.to_vec();
        for t in 0..self.tables.len() {
            for group in &self.tables[t].children {
                let mut below: Vec<u32> = rows[t]
                    .iter()
                    .flat_map(|&r| group.of(r).iter().copied())
                    .collect();
                below.sort_unstable();
                rows[group.table] = below;
            }
        }
        rows
    }
}

/// One table through the QI columns `cols`.
fn project_table(t: &TableNodes, cols: &[usize]) -> Result<TableNodes, ForestError> {
    let nqi = t.nqi();
    if let Some(&c) = cols.iter().find(|&&c| c >= nqi) {
        return Err(ForestError::Internal(format!(
            "a projection keeps QI column {c} of table {}, which has {nqi}",
            t.name
        )));
    }
    let mut qi = Vec::with_capacity(t.rows() * cols.len());
    for r in 0..t.rows() {
        qi.extend(cols.iter().map(|&c| t.qi[r * nqi + c]));
    }
    Ok(TableNodes {
        hierarchies: cols.iter().map(|&c| t.hierarchies[c].clone()).collect(),
        qi,
        children: t.children.clone(),
        ..t.clone_without_codes()
    })
}

/// Table `t`'s rows `rows[t]`, parents renumbered into `rows[parent table]`; children are
/// grouped by the caller once every table is built.
fn subset_table(
    forest: &Forest,
    t: usize,
    nodes: &TableNodes,
    rows: &[Vec<u32>],
) -> Result<TableNodes, ForestError> {
    let mine = &rows[t];
    let parent = match forest.parent_table(t) {
        None => vec![u32::MAX; mine.len()],
        Some(p) => {
            let mut new_row = vec![u32::MAX; forest.tables[p].rows()];
            for (i, &r) in rows[p].iter().enumerate() {
                new_row[r as usize] = i as u32;
            }
            mine.iter()
                .map(|&r| new_row[nodes.parent[r as usize] as usize])
                .collect()
        }
    };
    let batch = take_rows(&nodes.batch, mine)?;
    let qi = mine
        .iter()
        .flat_map(|&r| nodes.codes(r).iter().copied())
        .collect();
    let sensitive = nodes
        .sensitive
        .iter()
        .map(|s| SensitiveColumn {
            codes: mine.iter().map(|&r| s.codes[r as usize]).collect(),
            ..s.clone()
        })
        .collect();
    Ok(TableNodes {
        name: nodes.name.clone(),
        batch,
        hierarchies: nodes.hierarchies.clone(),
        qi,
        sensitive,
        parent,
        children: Vec::new(),
        orphans_dropped: 0,
        no_parent: 0,
        rows_in: mine.len(),
    })
}

/// The `rows` of `batch`, in order (a batch without columns keeps its row count only).
fn take_rows(batch: &RecordBatch, rows: &[u32]) -> Result<RecordBatch, ForestError> {
    let internal = |e: arrow::error::ArrowError| ForestError::Internal(e.to_string());
    if batch.num_columns() == 0 {
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        return RecordBatch::try_new_with_options(batch.schema(), Vec::new(), &options)
            .map_err(internal);
    }
    take_record_batch(batch, &UInt32Array::from(rows.to_vec())).map_err(internal)
}

impl Forest {
    /// The table whose rows table `t`'s rows hang under, if any.
    pub(crate) fn parent_table(&self, t: usize) -> Option<usize> {
        self.tables
            .iter()
            .position(|p| p.children.iter().any(|g| g.table == t))
    }
}

impl TableNodes {
    /// Everything of the table but its codes and links, for a view to fill in.
    fn clone_without_codes(&self) -> TableNodes {
        TableNodes {
            name: self.name.clone(),
            batch: self.batch.clone(),
            hierarchies: Vec::new(),
            qi: Vec::new(),
            sensitive: self.sensitive.clone(),
            parent: self.parent.clone(),
            children: Vec::new(),
            orphans_dropped: self.orphans_dropped,
            no_parent: self.no_parent,
            rows_in: self.rows_in,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::shaped;

    /// `shaped`'s forest with codes 10 * row + column on two QI columns of each table.
    fn coded(children: &[Vec<usize>]) -> Forest {
        let mut f = shaped(children);
        for t in &mut f.tables {
            let n = t.rows();
            t.qi = (0..n)
                .flat_map(|r| [10 * r as u32, 10 * r as u32 + 1])
                .collect();
            let h = crate::hierarchy::Hierarchy::flat("h", &["a"]);
            t.hierarchies = vec![h.clone(), h];
        }
        f
    }

    #[test]
    fn a_projection_keeps_the_columns_asked_in_their_order_and_every_row() {
        let f = coded(&[vec![1, 2], vec![0]]);
        let p = f
            .project(&vec![vec![1]; f.tables.len()])
            .expect("projected");
        for (a, b) in f.tables.iter().zip(&p.tables) {
            assert_eq!(b.nqi(), 1);
            assert_eq!(a.parent, b.parent);
            for r in 0..a.rows() as u32 {
                assert_eq!(b.codes(r), &a.codes(r)[1..2]);
            }
        }
        let swapped = f
            .project(&vec![vec![1, 0]; f.tables.len()])
            .expect("projected");
        assert_eq!(swapped.tables[0].codes(1), &[11, 10]);
    }

    #[test]
    fn a_projection_past_the_columns_is_refused() {
        let f = coded(&[vec![1]]);
        assert!(f.project(&vec![vec![2]; f.tables.len()]).is_err());
        assert!(f.project(&[vec![0]]).is_err());
    }

    #[test]
    fn a_subset_holds_its_entities_trees_renumbered_in_order() {
        // Entity 0: one child with two grandchildren; entity 1: none; entity 2: two
        // children, the second with one grandchild.
        let f = coded(&[vec![2], vec![], vec![0, 1]]);
        let (s, rows) = f.subset(&[0, 2]).expect("a subset");
        assert_eq!(rows[0], vec![0, 2]);
        assert_eq!(rows[1], vec![0, 1, 2]);
        assert_eq!(rows[2], vec![0, 1, 2]);
        assert_eq!(s.entities(), 2);
        assert_eq!(s.tables[1].parent, vec![0, 1, 1]);
        assert_eq!(s.tables[2].parent, vec![0, 0, 2]);
        assert_eq!(s.tables[0].children[0].of(1), &[1, 2]);
        assert_eq!(s.tables[1].codes(2), f.tables[1].codes(2));
        let (one, rows) = f.subset(&[2]).expect("a subset");
        assert_eq!(rows, vec![vec![2], vec![1, 2], vec![2]]);
        assert_eq!(one.tables[2].parent, vec![1]);
        assert_eq!(one.tables[2].codes(0), f.tables[2].codes(2));
    }

    #[test]
    fn the_subset_of_every_entity_is_the_forest() {
        let f = coded(&[vec![2, 1], vec![0], vec![3]]);
        let all: Vec<u32> = (0..f.entities() as u32).collect();
        let (s, _) = f.subset(&all).expect("a subset");
        for (a, b) in f.tables.iter().zip(&s.tables) {
            assert_eq!(a.qi, b.qi);
            assert_eq!(a.parent, b.parent);
            assert_eq!(a.children.len(), b.children.len());
            for (x, y) in a.children.iter().zip(&b.children) {
                assert_eq!((&x.offsets, &x.rows), (&y.offsets, &y.rows));
            }
        }
    }

    #[test]
    fn a_subset_of_unsorted_or_unknown_entities_is_refused() {
        let f = coded(&[vec![1], vec![1]]);
        assert!(f.subset(&[1, 0]).is_err());
        assert!(f.subset(&[0, 0]).is_err());
        assert!(f.subset(&[5]).is_err());
    }
}
