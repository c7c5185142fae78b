//! The leaf domain of a fact and the test of a released label tuple against it.
//!
//! A generalized cell stands for every leaf under its label (001 Def. 3: a release is a
//! generalization of the source through the DGH), so a released row is consistent with a fact
//! iff some choice of one leaf under each of its labels satisfies the fact.
//!
//! A fact is split at its top-level ANDs and its conjuncts grouped into components that share
//! no column ([`Component`]). A choice of leaves satisfies the fact iff its restriction to each
//! component's columns satisfies that component, and the leaves chosen for different
//! components are chosen independently, so a label tuple is consistent with the fact iff it
//! is consistent with every component: exactly the answer of evaluating the whole fact over
//! the cross product of all its columns, without enumerating that product. Each component is
//! SQL, evaluated once, by DataFusion, over every combination of leaves of its own columns
//! (typed as in the source, so `yob > 1990` compares numbers; a component naming no column is
//! evaluated once); the restriction of each distinct label tuple to the component's columns is
//! then tested against the satisfying combinations by ancestry in the hierarchy. So
//! `copy = 520 AND day = '2005-07-05'` is two one-column evaluations; only a component that
//! couples columns (a comparison between them, an OR across them) ranges over their product,
//! and at most [`DOMAIN_CAP`] combinations of it.
//!
//! The leaves are the values the source column holds: the adversary is granted the column's
//! domain, the conservative choice (a declared hierarchy may list values nobody has, and a
//! weaker adversary who counted those would find more candidates than a real one).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};

use super::fact::{Component, Fact, FactError};
use crate::hierarchy::{Hierarchy, HierarchyError};
use crate::plan::HierarchyDef;
use crate::warehouse::{
    numeric_value, one_line, quote_ident, render_value, Scratch, Warehouse, WarehouseError,
};

/// The most leaf combinations one component of a fact is evaluated over. A component couples
/// few columns and each has at most as many leaves as distinct values, so real facts stay far
/// below this; the cap keeps a condition coupling several high-cardinality columns from
/// exhausting memory.
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

/// A fact evaluated component by component (module doc): the label test of the whole fact.
pub(super) struct FactDomain<'a> {
    components: Vec<ComponentDomain<'a>>,
}

struct ComponentDomain<'a> {
    /// Positions of the component's columns among the fact's columns.
    at: Vec<usize>,
    satisfying: Satisfying<'a>,
}

/// Evaluates every component of `fact` over the leaves of its own columns; `columns` are the
/// domains of the fact's columns, in the fact's order, and `table` its table's name. A
/// component over more than `cap` combinations is refused before anything is evaluated.
pub(super) async fn evaluate_fact<'a>(
    table: &str,
    fact: &Fact,
    columns: &[&'a ColumnDomain],
    cap: usize,
) -> Result<FactDomain<'a>, FactError> {
    let placed: Vec<(&Component, Vec<usize>)> = fact
        .components
        .iter()
        .map(|c| {
            let at = c
                .columns
                .iter()
                .map(|name| {
                    fact.columns
                        .iter()
                        .position(|n| n == name)
                        .expect("a component's columns are columns of its fact")
                })
                .collect();
            (c, at)
        })
        .collect();
    for (c, at) in &placed {
        let domains: Vec<&ColumnDomain> = at.iter().map(|&i| columns[i]).collect();
        check_size(table, &c.columns, &domains, cap)?;
    }
    let mut components = Vec::with_capacity(placed.len());
    for (c, at) in placed {
        let domains = at.iter().map(|&i| columns[i]).collect();
        let satisfying = evaluate(table, &c.columns, &c.sql, domains, cap).await?;
        components.push(ComponentDomain { at, satisfying });
    }
    Ok(FactDomain { components })
}

impl FactDomain<'_> {
    /// Per component: how many leaf combinations it was evaluated over, and how many satisfy
    /// it.
    pub(super) fn sizes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.components
            .iter()
            .map(|c| (c.satisfying.size(), c.satisfying.count()))
    }

    /// A label test that remembers each component's verdict on the labels of its own
    /// columns, so rows that differ only in another component's labels reuse it.
    pub(super) fn tester(&self) -> Tester<'_> {
        Tester {
            fact: self,
            seen: vec![HashMap::new(); self.components.len()],
        }
    }
}

/// Tests label tuples against a [`FactDomain`] (see [`FactDomain::tester`]).
pub(super) struct Tester<'f> {
    fact: &'f FactDomain<'f>,
    /// Per component: its nodes -> whether some leaves under them satisfy it.
    seen: Vec<HashMap<Vec<u32>, bool>>,
}

impl Tester<'_> {
    /// Whether some leaves under `nodes` (one node per column of the fact, in its order)
    /// satisfy the fact: whether they satisfy every component.
    pub(super) fn consistent(&mut self, nodes: &[u32]) -> bool {
        self.fact
            .components
            .iter()
            .zip(&mut self.seen)
            .all(|(c, seen)| {
                let own: Vec<u32> = c.at.iter().map(|&i| nodes[i]).collect();
                if let Some(&fits) = seen.get(&own) {
                    return fits;
                }
                let fits = c.satisfying.consistent(&own);
                seen.insert(own, fits);
                fits
            })
    }
}

/// The combinations of leaves (one per named column) that satisfy one condition.
pub(super) struct Satisfying<'a> {
    columns: Vec<&'a ColumnDomain>,
    /// Per combination, in mixed radix with the last column varying fastest.
    holds: Vec<bool>,
    count: usize,
}

/// Refuses a condition over `columns` (named `names` in `table`) whose leaf combinations
/// exceed `cap`; returns their number otherwise.
fn check_size(
    table: &str,
    names: &[String],
    columns: &[&ColumnDomain],
    cap: usize,
) -> Result<usize, FactError> {
    let size = columns
        .iter()
        .try_fold(1usize, |p, c| p.checked_mul(c.len()))
        .filter(|&n| n <= cap);
    if let Some(size) = size {
        return Ok(size);
    }
    let qualified: Vec<String> = names.iter().map(|n| format!("{table}.{n}")).collect();
    if let ([column], [domain]) = (qualified.as_slice(), columns) {
        return Err(FactError::ColumnTooLarge {
            column: column.clone(),
            size: domain.len(),
            cap,
        });
    }
    Err(FactError::DomainTooLarge {
        columns: qualified
            .into_iter()
            .zip(columns)
            .map(|(n, c)| (n, c.len()))
            .collect(),
        cap,
    })
}

/// Evaluates the condition `sql` (its columns quoted as `"table"."column"`) over every
/// combination of the leaves of `columns`, named `names` in `table`; with no column, once.
pub(super) async fn evaluate<'a>(
    table: &str,
    names: &[String],
    sql: &str,
    columns: Vec<&'a ColumnDomain>,
    cap: usize,
) -> Result<Satisfying<'a>, FactError> {
    let size = check_size(table, names, &columns, cap)?;
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
    let scratch = Scratch::new(rayon::current_num_threads());
    scratch.add(table, batch).map_err(|e| eval(&e))?;
    let query = format!(
        "SELECT {} FROM {} WHERE {sql}",
        quote_ident(INDEX),
        quote_ident(table)
    );
    let found = scratch.sql(&query).await.map_err(|e| eval(&e))?;
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

    /// How many of them satisfy the condition.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// Whether some leaves under `nodes` (one node per column) satisfy the condition. Walks
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
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    fn course_domain(values: &[&str]) -> ColumnDomain {
        let values: Vec<Option<&str>> = values.iter().copied().map(Some).collect();
        course_domain_with_nulls(&values)
    }

    fn course_domain_with_nulls(values: &[Option<&str>]) -> ColumnDomain {
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
        let values: Vec<Option<i64>> = values.iter().copied().map(Some).collect();
        band_domain("courses.yob", &values)
    }

    /// An integer column banded by 5 and 10.
    fn band_domain(column: &str, values: &[Option<i64>]) -> ColumnDomain {
        let def = HierarchyDef::Bands {
            widths: vec![5.0, 10.0],
            range: None,
            pos: Pos::default(),
        };
        let values: ArrayRef = Arc::new(Int64Array::from(values.to_vec()));
        ColumnDomain::new(column, values, "band_h", &def).expect("valid hierarchy")
    }

    /// `text` parsed as a fact on courses(course, yob, year), all QIs.
    fn parse(text: &str) -> Result<Fact, FactError> {
        use crate::attack::fact::tests::{qi, table};
        let family = [table(
            "courses",
            None,
            vec![qi("course"), qi("yob"), qi("year")],
        )];
        crate::attack::fact::parse(text, "student", &family)
    }

    fn fact(text: &str) -> Fact {
        parse(text).expect("valid fact")
    }

    /// The domains of `fact`'s columns, in its order, from `course`, `yob` and `year`.
    fn in_fact_order<'d>(
        fact: &Fact,
        course: &'d ColumnDomain,
        yob: &'d ColumnDomain,
        year: &'d ColumnDomain,
    ) -> Vec<&'d ColumnDomain> {
        fact.columns
            .iter()
            .map(|c| match c.as_str() {
                "course" => course,
                "yob" => yob,
                _ => year,
            })
            .collect()
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
            matches!(&e, FactError::DomainTooLarge { columns, cap: 11 } if columns.len() == 2),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("couples courses.course, courses.yob in one condition")
                && msg.contains("ranges over 12 combinations of leaves (courses.course: 3 x courses.yob: 4), more than the 11")
                && msg.contains("split the fact into conditions on one column each")
                && msg.contains("e.g. courses.course = <value> AND courses.yob = <value>"),
            "{msg}"
        );
        // One column with more leaves than the cap: nothing to split.
        let e = evaluate("courses", &names[1..], "TRUE", vec![&yob], 3)
            .await
            .err()
            .expect("4 leaves exceed a cap of 3");
        assert_eq!(
            e,
            FactError::ColumnTooLarge {
                column: "courses.yob".to_string(),
                size: 4,
                cap: 3
            }
        );
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

    #[tokio::test]
    async fn a_conjunctive_fact_beyond_the_cap_is_evaluated_column_by_column() {
        // 1,200 x 1,000 leaves: 1.2 million combinations, more than the cap.
        let yob = band_domain("courses.yob", &(0..1200).map(Some).collect::<Vec<_>>());
        let year = band_domain("courses.year", &(5000..6000).map(Some).collect::<Vec<_>>());
        let course = course_domain(&["CS", "Math"]);
        let text = "courses.yob = 17 AND courses.year BETWEEN 5003 AND 5004";
        let f = fact(text);
        let columns = in_fact_order(&f, &course, &yob, &year);
        let whole = evaluate("courses", &f.columns, text, columns.clone(), DOMAIN_CAP)
            .await
            .err()
            .expect("the cross product is over the cap");
        assert!(
            matches!(whole, FactError::DomainTooLarge { .. }),
            "{whole:?}"
        );
        let d = evaluate_fact("courses", &f, &columns, DOMAIN_CAP)
            .await
            .expect("two one-column components");
        assert_eq!(d.sizes().collect::<Vec<_>>(), [(1200, 1), (1000, 2)]);
        let both = [&yob, &year];
        let mut t = d.tester();
        for (labels, expected) in [
            (["17", "5003"], true),
            (["[15,19]", "[5000,5004]"], true),
            (["[10,19]", "*"], true),
            (["*", "*"], true),
            (["18", "5003"], false),
            (["[15,19]", "[5005,5009]"], false),
            (["[20,24]", "*"], false),
            (["*", "5002"], false),
        ] {
            assert_eq!(t.consistent(&nodes(&both, &labels)), expected, "{labels:?}");
        }

        // The coupled component is refused, named by its columns; the other is not the
        // reason.
        let f = fact("courses.course = 'Math' AND courses.yob < courses.year - 4000");
        let columns = in_fact_order(&f, &course, &yob, &year);
        let e = evaluate_fact("courses", &f, &columns, DOMAIN_CAP)
            .await
            .err()
            .expect("a comparison across two large columns");
        let msg = e.to_string();
        assert!(
            msg.contains("ranges over 1200000 combinations")
                && msg.contains("couples courses.yob, courses.year in one condition")
                && msg.contains("(courses.yob: 1200 x courses.year: 1000)")
                && msg.contains("e.g. courses.yob = <value> AND courses.year = <value>")
                && !msg.contains("courses.course"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn conditions_on_no_column_and_nulls_hold_only_when_true() {
        let course = course_domain(&["CS", "History", "Math"]);
        let yob = band_domain("courses.yob", &[Some(1988), Some(1990), None]);
        let year = band_domain("courses.year", &[Some(2001)]);
        let consistent = |text: &'static str, labels: [Option<&'static str>; 2]| {
            let f = fact(text);
            let columns = in_fact_order(&f, &course, &yob, &year);
            let nodes: Vec<u32> = columns
                .iter()
                .zip(labels)
                .map(|(d, l)| d.node(l).expect("a label of the hierarchy"))
                .collect();
            async move {
                let d = evaluate_fact("courses", &f, &columns, DOMAIN_CAP)
                    .await
                    .expect("fact evaluates");
                let fits = d.tester().consistent(&nodes);
                fits
            }
        };
        let any = [Some("*"), Some("*")];
        let math = "courses.course = 'Math' AND courses.yob > 1980";
        assert!(consistent(math, any).await);
        // A false or NULL condition naming no column is still part of the fact.
        assert!(
            consistent(
                "courses.course = 'Math' AND courses.yob > 1980 AND 1 = 1",
                any
            )
            .await
        );
        assert!(
            !consistent(
                "courses.course = 'Math' AND courses.yob > 1980 AND 1 = 0",
                any
            )
            .await
        );
        assert!(
            !consistent(
                "courses.course = 'Math' AND courses.yob > 1980 AND CAST(NULL AS INT) = 1",
                any
            )
            .await
        );
        // A condition NULL for every leaf holds for none.
        assert!(!consistent("courses.course = 'Math' AND courses.yob = NULL", any).await);
        // The NULL leaf: `<>` is NULL for it, IS NULL holds.
        let null_yob = [Some("Math"), None];
        assert!(!consistent("courses.course = 'Math' AND courses.yob <> 1", null_yob).await);
        assert!(consistent("courses.course = 'Math' AND courses.yob IS NULL", null_yob).await);
    }

    /// A condition on courses(course, yob, year): one column, two coupled, or none.
    fn atom() -> impl Strategy<Value = String> {
        (0usize..17, 1978i64..2014).prop_map(|(kind, n)| match kind {
            0 => "courses.course = 'Math'".to_string(),
            1 => "courses.course IN ('CS', 'Physics')".to_string(),
            2 => "courses.course <> 'History'".to_string(),
            3 => "courses.course IS NULL".to_string(),
            4 => format!("courses.yob > {n}"),
            5 => format!("courses.yob = {n}"),
            6 => format!("courses.yob <> {n}"),
            7 => "courses.yob IS NULL".to_string(),
            8 => "courses.yob = NULL".to_string(),
            9 => format!("courses.year BETWEEN {n} AND {}", n + 4),
            10 => format!("courses.year < {n}"),
            11 => "courses.yob + 20 > courses.year".to_string(),
            12 => format!("courses.course = 'Math' OR courses.yob < {n}"),
            13 => format!("(courses.year > {n}) = (courses.course = 'CS')"),
            14 => "1 = 1".to_string(),
            15 => "1 = 0".to_string(),
            _ => "CAST(NULL AS INT) = 1".to_string(),
        })
    }

    /// A fact: one to four conditions (each an AND, OR or NOT of atoms) joined by AND.
    fn fact_text() -> impl Strategy<Value = String> {
        let tree = atom().prop_recursive(2, 8, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) OR ({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) AND ({b})")),
                inner.prop_map(|a| format!("NOT ({a})")),
            ]
        });
        proptest::collection::vec(tree, 1..5).prop_map(|parts| {
            parts
                .iter()
                .map(|p| format!("({p})"))
                .collect::<Vec<_>>()
                .join(" AND ")
        })
    }

    /// Distinct values from `range`, perhaps with NULL; never empty.
    fn leaves(range: std::ops::Range<i64>) -> impl Strategy<Value = Vec<Option<i64>>> {
        (proptest::collection::btree_set(range, 1..10), any::<bool>()).prop_map(|(set, null)| {
            let mut v: Vec<Option<i64>> = set.into_iter().map(Some).collect();
            if null {
                v.push(None);
            }
            v
        })
    }

    proptest! {
        #![proptest_config(Config { cases: 64, rng_seed: RngSeed::Fixed(20260522), failure_persistence: None, ..Config::default() })]

        /// Components give the cross product's verdict on every label tuple, and its counts.
        #[test]
        fn components_agree_with_the_cross_product(
            text in fact_text(),
            courses in proptest::sample::subsequence(vec!["CS", "History", "Math", "Physics", "Religion"], 1..=5),
            course_null in any::<bool>(),
            yobs in leaves(1978..2010),
            years in leaves(1998..2014),
        ) {
            let mut course_values: Vec<Option<&str>> = courses.into_iter().map(Some).collect();
            if course_null {
                course_values.push(None);
            }
            let course = course_domain_with_nulls(&course_values);
            let yob = band_domain("courses.yob", &yobs);
            let year = band_domain("courses.year", &years);
            let f = match parse(&text) {
                Ok(f) => f,
                Err(FactError::NoColumn { .. }) => return Ok(()),
                Err(e) => panic!("{text}: {e}"),
            };
            let columns = in_fact_order(&f, &course, &yob, &year);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for DataFusion");
            let (whole, parts) = runtime.block_on(async {
                let whole = evaluate("courses", &f.columns, &text, columns.clone(), DOMAIN_CAP)
                    .await
                    .expect("the whole fact evaluates");
                let parts = evaluate_fact("courses", &f, &columns, DOMAIN_CAP)
                    .await
                    .expect("its components evaluate");
                (whole, parts)
            });
            let sizes: Vec<(usize, usize)> = parts.sizes().collect();
            prop_assert_eq!(whole.size(), sizes.iter().map(|s| s.0).product::<usize>());
            prop_assert_eq!(whole.count(), sizes.iter().map(|s| s.1).product::<usize>());
            let mut tester = parts.tester();
            let mut nodes = vec![0u32; columns.len()];
            'tuples: loop {
                prop_assert_eq!(
                    whole.consistent(&nodes),
                    tester.consistent(&nodes),
                    "{} under {:?}",
                    text,
                    nodes
                );
                // The next tuple of nodes (an odometer over every column's hierarchy).
                let mut k = columns.len();
                loop {
                    if k == 0 {
                        break 'tuples;
                    }
                    k -= 1;
                    nodes[k] += 1;
                    if (nodes[k] as usize) < columns[k].hierarchy.len() {
                        break;
                    }
                    nodes[k] = 0;
                }
            }
        }
    }
}
