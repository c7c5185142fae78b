//! The leaf domain of a fact and the test of a released label tuple against it.
//!
//! A generalized cell stands for every leaf under its label (001 Def. 3: a release is a
//! generalization of the source through the DGH), so a released row is consistent with a fact
//! iff some choice of one leaf under each of its labels satisfies the fact. The fact is SQL,
//! so it is evaluated once, by DataFusion, over every combination of leaves of the columns it
//! names (typed as in the source, so `yob > 1990` compares numbers); each distinct label tuple
//! is then tested against the satisfying combinations by ancestry in the hierarchy.
//!
//! The leaves are the values the source column holds: the adversary is granted the column's
//! domain, the conservative choice (a declared hierarchy may list values nobody has, and a
//! weaker adversary who counted those would find more candidates than a real one).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;

use super::fact::FactError;
use crate::hierarchy::{Hierarchy, HierarchyError};
use crate::plan::HierarchyDef;
use crate::warehouse::{
    numeric_value, one_line, quote_ident, render_value, Warehouse, WarehouseError,
};

/// The most leaf combinations one fact is evaluated over. A fact names few columns and each
/// has at most as many leaves as distinct values, so real facts stay far below this; the cap
/// keeps a fact over several high-cardinality columns from exhausting memory.
pub const DOMAIN_CAP: usize = 1_000_000;

/// The domain column numbering combinations; its name cannot clash with a quoted QI column
/// the fact names because facts only reach columns through `table.column`.
const INDEX: &str = "__relanon_domain";

/// One QI column's leaves, as the adversary knows them, and its hierarchy.
pub(super) struct ColumnDomain {
    /// The distinct source values, typed as in the source: one leaf each.
    values: ArrayRef,
    /// Leaf code of each value.
    leaves: Vec<u32>,
    hierarchy: Hierarchy,
    /// Released label -> node (`None`: the NULL leaf, released as SQL NULL).
    by_label: HashMap<Option<String>, u32>,
}

impl ColumnDomain {
    /// Builds the column's hierarchy from its distinct `values`, exactly as the anonymizer
    /// does from the column (bands and date parts take their leaves from the data).
    pub(super) fn new(
        column: &str,
        values: ArrayRef,
        hierarchy: &str,
        def: &HierarchyDef,
    ) -> Result<ColumnDomain, HierarchyError> {
        let texts: Vec<Option<String>> = (0..values.len())
            .map(|r| render_value(values.as_ref(), r))
            .collect();
        let numbers: Vec<Option<f64>> = (0..values.len())
            .map(|r| numeric_value(values.as_ref(), r))
            .collect();
        let built = Hierarchy::build(hierarchy, def, column, &texts, &numbers)?;
        let by_label = (0..built.hierarchy.len() as u32)
            .map(|code| (built.hierarchy.label(code).map(str::to_string), code))
            .collect();
        Ok(ColumnDomain {
            values,
            leaves: built.codes,
            hierarchy: built.hierarchy,
            by_label,
        })
    }

    /// The hierarchy node a released cell names, if it names one.
    pub(super) fn node(&self, label: Option<&str>) -> Option<u32> {
        self.by_label.get(&label.map(str::to_string)).copied()
    }

    pub(super) fn hierarchy_name(&self) -> &str {
        self.hierarchy.name()
    }

    fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Which leaves lie under `node` (the node itself when it is a leaf).
    fn under(&self, node: u32) -> Vec<bool> {
        self.leaves
            .iter()
            .map(|&leaf| self.hierarchy.lca(node, leaf) == node)
            .collect()
    }
}

/// The distinct values of `table.column` in the source, in their source type.
pub(super) async fn distinct_values(
    source: &Warehouse,
    table: &str,
    column: &str,
) -> Result<ArrayRef, WarehouseError> {
    let col = quote_ident(column);
    let batches = source
        .sql(&format!(
            "SELECT DISTINCT {col} FROM {} ORDER BY {col} NULLS LAST",
            quote_ident(table)
        ))
        .await?;
    let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
    if arrays.is_empty() {
        let data_type = source
            .table(table)
            .and_then(|t| t.column(column))
            .map_or(DataType::Utf8, |c| c.data_type.clone());
        return Ok(arrow::array::new_empty_array(&data_type));
    }
    arrow::compute::concat(&arrays).map_err(|e| WarehouseError::Query {
        sql: format!("SELECT DISTINCT {col}"),
        msg: one_line(e),
    })
}

/// The combinations of leaves (one per named column) that satisfy one fact.
pub(super) struct Satisfying<'a> {
    columns: Vec<&'a ColumnDomain>,
    /// Per combination, in mixed radix with the last column varying fastest.
    holds: Vec<bool>,
    count: usize,
}

/// Evaluates the fact `sql` (its columns quoted as `"table"."column"`) over every combination
/// of the leaves of `columns`, named `names` in `table`.
pub(super) async fn evaluate<'a>(
    table: &str,
    names: &[String],
    sql: &str,
    columns: Vec<&'a ColumnDomain>,
    cap: usize,
) -> Result<Satisfying<'a>, FactError> {
    let size = columns
        .iter()
        .try_fold(1usize, |p, c| p.checked_mul(c.len()))
        .filter(|&n| n <= cap);
    let Some(size) = size else {
        let detail = names
            .iter()
            .zip(&columns)
            .map(|(n, c)| format!("{n}: {}", c.len()))
            .collect::<Vec<_>>()
            .join(" x ");
        let product = columns.iter().map(|c| c.len() as f64).product::<f64>();
        return Err(FactError::DomainTooLarge {
            size: format!("{product:.0}"),
            detail,
            cap,
        });
    };
    let eval = |e: &dyn std::fmt::Display| FactError::Evaluation {
        msg: one_line(e),
        example: format!(
            "{table}.{} = <value>",
            names.first().map_or("<column>", String::as_str)
        ),
    };
    let mut fields = Vec::with_capacity(columns.len() + 1);
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len() + 1);
    let mut stride = size;
    for (name, c) in names.iter().zip(&columns) {
        stride /= c.len().max(1);
        let n = c.len().max(1);
        let picks: UInt32Array = (0..size).map(|i| ((i / stride) % n) as u32).collect();
        let taken = arrow::compute::take(c.values.as_ref(), &picks, None).map_err(|e| eval(&e))?;
        fields.push(Field::new(name, taken.data_type().clone(), true));
        arrays.push(taken);
    }
    fields.push(Field::new(INDEX, DataType::UInt64, false));
    arrays.push(Arc::new((0..size as u64).collect::<UInt64Array>()));
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| eval(&e))?;
    let ctx = crate::warehouse::session(rayon::current_num_threads());
    let provider = MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(|e| eval(&e))?;
    ctx.register_table(TableReference::bare(table), Arc::new(provider))
        .map_err(|e| eval(&e))?;
    let query = format!(
        "SELECT {} FROM {} WHERE {sql}",
        quote_ident(INDEX),
        quote_ident(table)
    );
    let df = ctx.sql(&query).await.map_err(|e| eval(&e))?;
    let found = df.collect().await.map_err(|e| eval(&e))?;
    let mut holds = vec![false; size];
    let mut count = 0;
    for b in &found {
        for &i in b.column(0).as_primitive::<UInt64Type>().values() {
            holds[i as usize] = true;
            count += 1;
        }
    }
    Ok(Satisfying {
        columns,
        holds,
        count,
    })
}

impl Satisfying<'_> {
    /// How many leaf combinations there are.
    pub(super) fn size(&self) -> usize {
        self.holds.len()
    }

    /// How many of them satisfy the fact.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// Whether some leaves under `nodes` (one node per column) satisfy the fact. Walks
    /// whichever is smaller: the combinations under the nodes, or the satisfying ones.
    pub(super) fn consistent(&self, nodes: &[u32]) -> bool {
        let under: Vec<Vec<bool>> = self
            .columns
            .iter()
            .zip(nodes)
            .map(|(c, &node)| c.under(node))
            .collect();
        let chosen: Vec<Vec<usize>> = under
            .iter()
            .map(|u| (0..u.len()).filter(|&i| u[i]).collect())
            .collect();
        let combinations = chosen
            .iter()
            .try_fold(1usize, |p, c| p.checked_mul(c.len()));
        match combinations {
            Some(0) => false,
            Some(n) if n <= self.count => self.any_chosen(&chosen),
            _ => self.any_satisfying(&under),
        }
    }

    /// Enumerates the combinations of `chosen` leaves (an odometer) and looks each up.
    fn any_chosen(&self, chosen: &[Vec<usize>]) -> bool {
        let mut digit = vec![0usize; chosen.len()];
        loop {
            let index = digit
                .iter()
                .zip(chosen)
                .zip(&self.columns)
                .fold(0, |acc, ((&d, c), col)| acc * col.len() + c[d]);
            if self.holds[index] {
                return true;
            }
            let mut k = chosen.len();
            loop {
                if k == 0 {
                    return false;
                }
                k -= 1;
                digit[k] += 1;
                if digit[k] < chosen[k].len() {
                    break;
                }
                digit[k] = 0;
            }
        }
    }

    /// Decodes every satisfying combination and checks each leaf lies under its node.
    fn any_satisfying(&self, under: &[Vec<bool>]) -> bool {
        (0..self.holds.len())
            .filter(|&i| self.holds[i])
            .any(|mut i| {
                let mut fits = true;
                for (col, u) in self.columns.iter().zip(under).rev() {
                    let n = col.len();
                    fits &= u[i % n];
                    i /= n;
                }
                fits
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Pos;
    use arrow::array::{Int64Array, StringArray};

    fn course_domain(values: &[&str]) -> ColumnDomain {
        let def = HierarchyDef::Rows {
            rows: [
                ["Math", "Science"],
                ["CS", "Science"],
                ["Physics", "Science"],
                ["History", "Social"],
                ["Religion", "Social"],
            ]
            .iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect(),
            pos: Pos::default(),
        };
        let values: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        ColumnDomain::new("courses.course", values, "course_h", &def).expect("valid hierarchy")
    }

    fn yob_domain(values: &[i64]) -> ColumnDomain {
        let def = HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: None,
            pos: Pos::default(),
        };
        let values: ArrayRef = Arc::new(Int64Array::from(values.to_vec()));
        ColumnDomain::new("courses.yob", values, "yob_h", &def).expect("valid hierarchy")
    }

    fn nodes(domains: &[&ColumnDomain], labels: &[&str]) -> Vec<u32> {
        domains
            .iter()
            .zip(labels)
            .map(|(d, l)| d.node(Some(l)).unwrap_or_else(|| panic!("label {l}")))
            .collect()
    }

    async fn satisfying<'a>(
        names: &[&str],
        sql: &str,
        columns: Vec<&'a ColumnDomain>,
    ) -> Satisfying<'a> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        evaluate("courses", &names, sql, columns, DOMAIN_CAP)
            .await
            .expect("fact evaluates")
    }

    #[tokio::test]
    async fn a_label_is_consistent_iff_a_leaf_under_it_satisfies_the_fact() {
        let course = course_domain(&["CS", "History", "Math", "Physics"]);
        let s = satisfying(
            &["course"],
            "\"courses\".\"course\" = 'Math'",
            vec![&course],
        )
        .await;
        assert_eq!((s.size(), s.count()), (4, 1));
        for (label, expected) in [
            ("Math", true),
            ("Science", true),
            ("*", true),
            ("CS", false),
            ("Social", false),
            ("History", false),
        ] {
            assert_eq!(
                s.consistent(&nodes(&[&course], &[label])),
                expected,
                "{label}"
            );
        }
        // Religion is a declared leaf the data never holds: a label, but nothing under it.
        assert!(!s.consistent(&nodes(&[&course], &["Religion"])));
        assert_eq!(course.node(Some("Astrology")), None);
    }

    #[tokio::test]
    async fn numbers_compare_as_numbers_and_columns_combine() {
        let yob = yob_domain(&[1988, 1990, 1993, 2001]);
        let s = satisfying(&["yob"], "\"courses\".\"yob\" > 1990", vec![&yob]).await;
        assert_eq!(s.count(), 2);
        assert!(s.consistent(&nodes(&[&yob], &["[1990,1994]"])));
        assert!(!s.consistent(&nodes(&[&yob], &["[1985,1989]"])));
        assert!(!s.consistent(&nodes(&[&yob], &["1990"])));
        assert!(!s.consistent(&nodes(&[&yob], &["[1980,1989]"])));

        // One row: both conditions must hold of the same combination of leaves. One
        // combination satisfies, so labels are tested by walking it.
        let course = course_domain(&["CS", "History", "Math"]);
        let s = satisfying(
            &["course", "yob"],
            "\"courses\".\"course\" = 'Math' AND \"courses\".\"yob\" < 1990",
            vec![&course, &yob],
        )
        .await;
        assert_eq!((s.size(), s.count()), (12, 1));
        let both = [&course, &yob];
        assert!(s.consistent(&nodes(&both, &["Science", "[1985,1989]"])));
        assert!(s.consistent(&nodes(&both, &["*", "*"])));
        assert!(!s.consistent(&nodes(&both, &["Science", "[1990,1994]"])));
        assert!(!s.consistent(&nodes(&both, &["Social", "*"])));
        // Nine of twelve satisfy: small label tuples are tested by walking their own leaves.
        let s = satisfying(
            &["course", "yob"],
            "\"courses\".\"course\" <> 'History' OR \"courses\".\"yob\" = 2001",
            vec![&course, &yob],
        )
        .await;
        assert_eq!(s.count(), 9);
        assert!(s.consistent(&nodes(&both, &["History", "[2000,2004]"])));
        assert!(!s.consistent(&nodes(&both, &["History", "[1990,1994]"])));
    }

    #[tokio::test]
    async fn the_domain_is_capped_and_bad_sql_is_reported() {
        let course = course_domain(&["CS", "History", "Math"]);
        let yob = yob_domain(&[1988, 1990, 1993, 2001]);
        let names = vec!["course".to_string(), "yob".to_string()];
        let e = evaluate("courses", &names, "TRUE", vec![&course, &yob], 11)
            .await
            .err()
            .expect("12 combinations exceed a cap of 11");
        assert!(
            matches!(&e, FactError::DomainTooLarge { size, .. } if size == "12"),
            "{e:?}"
        );
        assert!(e.to_string().contains("course: 3 x yob: 4"), "{e}");
        let e = evaluate(
            "courses",
            &names[..1],
            "\"courses\".\"nope\" = 1",
            vec![&course],
            10,
        )
        .await
        .err()
        .expect("unknown column");
        assert!(matches!(e, FactError::Evaluation { .. }), "{e:?}");
    }
}
