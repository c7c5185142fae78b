//! Cluster representatives (001 Alg. 2 "MR_c") and the clusterings made of them: one anonymized tree standing for every member
//! of a cluster. Each node keeps, per member, the source row it stands for, so the release can
//! copy the representative to every member (001 Alg. 2 line 21) and drop what was suppressed.

use crate::forest::{Forest, TableNodes};

/// One node of a representative tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Rep {
    /// Family table index.
    pub table: u16,
    /// Generalized QI codes (hierarchy node codes), in the table's QI order.
    pub qi: Vec<u32>,
    /// Source row of this node for each member, in cluster member order.
    pub members: Vec<u32>,
    /// Children, ordered by child table (plan order) then source order.
    pub children: Vec<Rep>,
}

impl Rep {
    /// The node a merge of `a` and `b` (two nodes of `table`) starts from: QIs generalized to
    /// their common ancestors (`gen` of 001 Alg. 3), members of `a` first.
    pub fn merged_node(a: &Rep, b: &Rep, table: &TableNodes) -> (Vec<u32>, Vec<u32>) {
        let qi =
            a.qi.iter()
                .zip(&b.qi)
                .zip(&table.hierarchies)
                .map(|((&x, &y), h)| h.lca(x, y))
                .collect();
        let mut members = Vec::with_capacity(a.members.len() + b.members.len());
        members.extend_from_slice(&a.members);
        members.extend_from_slice(&b.members);
        (qi, members)
    }

    /// An entity's own tree: every row reachable from `row` of table `table`.
    pub fn from_forest(forest: &Forest, table: usize, row: u32) -> Rep {
        let t = &forest.tables[table];
        let mut children = Vec::new();
        for group in &t.children {
            for &c in group.of(row) {
                children.push(Rep::from_forest(forest, group.table, c));
            }
        }
        Rep {
            table: table as u16,
            qi: t.codes(row).to_vec(),
            members: vec![row],
            children,
        }
    }

    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    /// Number of nodes in this subtree (one copy).
    pub fn nodes(&self) -> usize {
        1 + self.children.iter().map(Rep::nodes).sum::<usize>()
    }

    /// Children of one child table (they are contiguous).
    pub fn children_of(&self, table: u16) -> &[Rep] {
        &self.children[self.child_range(table)]
    }

    /// Where the children of one child table lie in `children`.
    pub fn child_range(&self, table: u16) -> std::ops::Range<usize> {
        let start = self.children.partition_point(|c| c.table < table);
        let end = self.children.partition_point(|c| c.table <= table);
        start..end
    }
}

/// The result of clustering: closed equivalence classes and the entities suppressed whole.
#[derive(Debug, Clone)]
pub struct Clustering {
    /// One representative per EC; `rep.members` are the member entities' rows.
    pub ecs: Vec<Rep>,
    /// Entity rows left in a last cluster smaller than k (001 Alg. 2 line 22).
    pub suppressed: Vec<u32>,
}
