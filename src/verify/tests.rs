//! End-to-end checks of the verifier on tiny hand-built warehouses: a university with
//! students <- courses <- books (books have no key), a course catalog as a dimension, and a
//! hand-made 2-anonymous release that each test breaks in one way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use rusqlite::types::Value as Sql;
use serde_json::{json, Value};

use super::*;
use crate::keymap::{KeyPair, KeyValue, TableKeys};
use crate::plan::{
    ColumnRole, DimensionTable, FamilyTable, HierarchyDef, KeyPolicy, Model, Params, PlannedColumn,
    ReleasedKey,
};
use crate::policy::{DatePart, Pos};
use crate::policy::{LabelDecl, Role};

mod anatomy;
mod ldiv;
mod leaks;

/// Tasks run here, one after another, each through [`check_partition`] on bytes only, as
/// a cluster's executors run them.
pub(super) struct Local<'a> {
    pub plan: &'a Plan,
    pub source: &'a Warehouse,
    pub release: &'a Warehouse,
    pub keys: Keys<'a>,
}

#[async_trait::async_trait]
impl Tasks for Local<'_> {
    fn least(&self) -> usize {
        2
    }

    async fn run(&self, shared: Vec<u8>, parts: usize) -> Result<Vec<Vec<u8>>, String> {
        let mut answers = Vec::new();
        for part in 0..parts {
            let (plan, source, release) = (self.plan, self.source, self.release);
            let answer = check_partition(plan, source, release, self.keys, &shared, part)
                .await
                .map_err(|e| format!("partition {part}: {e}"))?;
            answers.push(answer);
        }
        Ok(answers)
    }
}

fn i(v: i64) -> Sql {
    Sql::Integer(v)
}
fn f(v: f64) -> Sql {
    Sql::Real(v)
}
fn t(s: &str) -> Sql {
    Sql::Text(s.to_string())
}

#[derive(Clone)]
struct Table {
    name: &'static str,
    /// (name, SQLite declared type: INTEGER, REAL or TEXT)
    columns: Vec<(&'static str, &'static str)>,
    rows: Vec<Vec<Sql>>,
}

impl Table {
    fn new(
        name: &'static str,
        columns: &[(&'static str, &'static str)],
        rows: Vec<Vec<Sql>>,
    ) -> Table {
        Table {
            name,
            columns: columns.to_vec(),
            rows,
        }
    }

    fn col(&self, name: &str) -> usize {
        self.columns
            .iter()
            .position(|c| c.0 == name)
            .expect("test names an existing column")
    }
}

fn table<'a>(db: &'a mut [Table], name: &str) -> &'a mut Table {
    db.iter_mut()
        .find(|t| t.name == name)
        .expect("test names an existing table")
}

/// Sets `column` of the rows whose first column is `first`.
fn set(db: &mut [Table], name: &str, first: Sql, column: &str, value: Sql) {
    let t = table(db, name);
    let c = t.col(column);
    let mut hit = false;
    for row in t.rows.iter_mut().filter(|r| r[0] == first) {
        row[c] = value.clone();
        hit = true;
    }
    assert!(hit, "no {name} row starts with {first:?}");
}

fn source_db() -> Vec<Table> {
    vec![
        Table::new(
            "students",
            &[
                ("sid", "INTEGER"),
                ("name", "TEXT"),
                ("yob", "INTEGER"),
                ("gpa", "REAL"),
                ("enrolled", "TEXT"),
            ],
            vec![
                vec![i(1), t("Ann"), i(1990), f(3.5), t("2021-03-05")],
                vec![i(2), t("Bob"), i(1993), f(3.9), t("2021-03-20")],
                vec![i(3), t("Cy"), i(1981), f(2.1), t("2020-07-01")],
                vec![i(4), t("Di"), i(1984), f(2.8), t("2020-11-11")],
            ],
        ),
        Table::new(
            "courses",
            &[
                ("cid", "INTEGER"),
                ("sid", "INTEGER"),
                ("course", "TEXT"),
                ("grade", "INTEGER"),
            ],
            vec![
                vec![i(10), i(1), t("Math"), i(90)],
                vec![i(11), i(1), t("History"), i(70)],
                vec![i(20), i(2), t("History"), i(75)],
                vec![i(21), i(2), t("CS"), i(80)],
                vec![i(30), i(3), t("Math"), i(60)],
                vec![i(40), i(4), t("CS"), i(65)],
            ],
        ),
        Table::new(
            "books",
            &[("cid", "INTEGER"), ("title", "TEXT"), ("price", "REAL")],
            vec![
                vec![i(10), t("Algebra"), f(10.5)],
                vec![i(10), t("Calculus"), f(20.0)],
                vec![i(11), t("Rome"), f(5.0)],
                vec![i(20), t("Greece"), f(5.0)],
                vec![i(21), t("SICP"), f(30.0)],
                vec![i(30), t("Algebra"), f(10.5)],
                vec![i(40), t("SICP"), f(30.0)],
            ],
        ),
        catalog(),
    ]
}

fn catalog() -> Table {
    Table::new(
        "catalog",
        &[("course", "TEXT"), ("dept", "TEXT")],
        vec![
            vec![t("Math"), t("Sci")],
            vec![t("CS"), t("Sci")],
            vec![t("History"), t("Hum")],
        ],
    )
}

/// A correct 2-anonymous release. Entities 1 and 2 form one EC although their courses are
/// listed in opposite orders (Science/History vs History/Science); 3 and 4 the other.
/// Book (10, Calculus) is suppressed so courses 10 and 21 have the same shape.
fn release_db() -> Vec<Table> {
    vec![
        Table::new(
            "students",
            &[
                ("sid", "INTEGER"),
                ("yob", "TEXT"),
                ("gpa", "REAL"),
                ("enrolled", "TEXT"),
            ],
            vec![
                vec![i(1), t("[1990,1999]"), f(3.5), t("2021-03")],
                vec![i(2), t("[1990,1999]"), f(3.9), t("2021-03")],
                vec![i(3), t("[1980,1989]"), f(2.1), t("2020")],
                vec![i(4), t("[1980,1989]"), f(2.8), t("2020")],
            ],
        ),
        Table::new(
            "courses",
            &[
                ("cid", "INTEGER"),
                ("sid", "INTEGER"),
                ("course", "TEXT"),
                ("grade", "INTEGER"),
            ],
            vec![
                vec![i(10), i(1), t("Science"), i(90)],
                vec![i(11), i(1), t("History"), i(70)],
                vec![i(20), i(2), t("History"), i(75)],
                vec![i(21), i(2), t("Science"), i(80)],
                vec![i(30), i(3), t("Science"), i(60)],
                vec![i(40), i(4), t("Science"), i(65)],
            ],
        ),
        Table::new(
            "books",
            &[("cid", "INTEGER"), ("title", "TEXT"), ("price", "REAL")],
            vec![
                vec![i(10), t("Books"), f(10.5)],
                vec![i(11), t("History books"), f(5.0)],
                vec![i(20), t("History books"), f(5.0)],
                vec![i(21), t("Books"), f(30.0)],
                vec![i(30), t("*"), f(10.5)],
                vec![i(40), t("*"), f(30.0)],
            ],
        ),
        catalog(),
    ]
}

fn report() -> Value {
    json!({
        "tables": [
            {"name": "students", "rows_in": 4, "released": 4, "suppressed": 0, "orphans_dropped": 0},
            {"name": "courses", "rows_in": 6, "released": 6, "suppressed": 0, "orphans_dropped": 0},
            {"name": "books", "rows_in": 7, "released": 6, "suppressed": 1, "orphans_dropped": 0},
        ],
        "equivalence_classes": 2,
        "smallest_ec": 2,
    })
}

fn col(name: &str, role: ColumnRole) -> PlannedColumn {
    PlannedColumn {
        name: name.to_string(),
        role,
    }
}

fn qi(h: &str) -> ColumnRole {
    ColumnRole::QuasiIdentifier {
        hierarchy: h.to_string(),
    }
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// The labels a declarations file would hold for `plan`'s roles: one per labelled family
/// column, and a default for each dimension (what the "declared roles" check reads).
fn labels_of(plan: &Plan) -> Vec<LabelDecl> {
    let mut out = Vec::new();
    for t in &plan.tables {
        for c in &t.columns {
            let role = match &c.role {
                ColumnRole::Key => continue,
                ColumnRole::Identifier => Role::Identifier,
                ColumnRole::QuasiIdentifier { hierarchy } => Role::QuasiIdentifier {
                    hierarchy: hierarchy.clone(),
                },
                ColumnRole::Sensitive { buckets } => Role::Sensitive {
                    buckets: buckets.clone(),
                },
                ColumnRole::Insensitive => Role::Insensitive,
            };
            out.push(LabelDecl {
                table: t.name.clone(),
                column: Some(c.name.clone()),
                role,
                pos: Pos::default(),
            });
        }
    }
    for d in &plan.dimensions {
        out.push(LabelDecl {
            table: d.name.clone(),
            column: None,
            role: Role::Insensitive,
            pos: Pos::default(),
        });
    }
    out
}

fn plan(k: usize) -> Plan {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut hierarchies = BTreeMap::new();
    hierarchies.insert(
        "age_h".to_string(),
        HierarchyDef::Bands {
            widths: vec![5.0, 10.0, 20.0],
            range: None,
            pos: Pos::default(),
        },
    );
    hierarchies.insert(
        "date_h".to_string(),
        HierarchyDef::DateParts {
            parts: vec![DatePart::Month, DatePart::Year],
            pos: Pos::default(),
        },
    );
    hierarchies.insert(
        "course_h".to_string(),
        HierarchyDef::Rows {
            rows: strings(&[
                &["Math", "Science"],
                &["CS", "Science"],
                &["History", "Humanities"],
            ]),
            pos: Pos::default(),
        },
    );
    hierarchies.insert(
        "book_h".to_string(),
        HierarchyDef::Rows {
            rows: strings(&[
                &["Algebra", "Math books", "Books"],
                &["Calculus", "Math books", "Books"],
                &["SICP", "CS books", "Books"],
                &["Rome", "History books", "Books", "*"],
                &["Greece", "History books", "History books", "Books"],
            ]),
            pos: Pos::default(),
        },
    );
    let mut plan = Plan {
        entity: "student".to_string(),
        tables: vec![
            FamilyTable {
                name: "students".to_string(),
                primary_key: names(&["sid"]),
                parent: None,
                parent_fk: vec![],
                parent_key: vec![],
                key: ReleasedKey::Own("sid".to_string()),
                released_fk: vec![],
                released_parent_key: vec![],
                redundant: vec![],
                part: None,
                links: vec![],
                children: vec![1],
                columns: vec![
                    col("sid", ColumnRole::Key),
                    col("name", ColumnRole::Identifier),
                    col("yob", qi("age_h")),
                    col("gpa", ColumnRole::Sensitive { buckets: None }),
                    col("enrolled", qi("date_h")),
                ],
            },
            FamilyTable {
                name: "courses".to_string(),
                primary_key: names(&["cid"]),
                parent: Some(0),
                parent_fk: names(&["sid"]),
                parent_key: names(&["sid"]),
                key: ReleasedKey::Own("cid".to_string()),
                released_fk: names(&["sid"]),
                released_parent_key: names(&["sid"]),
                redundant: vec![],
                part: None,
                links: vec![],
                children: vec![2],
                columns: vec![
                    col("cid", ColumnRole::Key),
                    col("sid", ColumnRole::Key),
                    col("course", qi("course_h")),
                    col("grade", ColumnRole::Sensitive { buckets: None }),
                ],
            },
            FamilyTable {
                name: "books".to_string(),
                primary_key: vec![],
                parent: Some(1),
                parent_fk: names(&["cid"]),
                parent_key: names(&["cid"]),
                key: ReleasedKey::None,
                released_fk: names(&["cid"]),
                released_parent_key: names(&["cid"]),
                redundant: vec![],
                part: None,
                links: vec![],
                children: vec![],
                columns: vec![
                    col("cid", ColumnRole::Key),
                    col("title", qi("book_h")),
                    col("price", ColumnRole::Insensitive),
                ],
            },
        ],
        dimensions: vec![DimensionTable {
            name: "catalog".to_string(),
            primary_key: vec![],
            columns: vec![
                col("course", ColumnRole::Insensitive),
                col("dept", ColumnRole::Insensitive),
            ],
            links: vec![],
        }],
        left_out: vec![],
        warnings: vec![],
        labels: vec![],
        hierarchies,
        params: Params {
            queries: 0,
            seed: Some(7),
            keys: KeyPolicy::Preserve,
            ..Params::defaults(Model::KAnonymity { k })
        },
        views: vec![],
        source: PathBuf::from("source.sqlite"),
        hierarchy_files: Vec::new(),
        target: None,
    };
    plan.labels = labels_of(&plan);
    plan
}

fn write_sqlite(path: &Path, db: &[Table]) {
    let conn = rusqlite::Connection::open(path).expect("create test SQLite file");
    for t in db {
        let cols: Vec<String> = t
            .columns
            .iter()
            .map(|(n, ty)| format!("\"{n}\" {ty}"))
            .collect();
        conn.execute(
            &format!("CREATE TABLE \"{}\" ({})", t.name, cols.join(", ")),
            [],
        )
        .expect("create table");
        let marks = vec!["?"; t.columns.len()].join(", ");
        let mut stmt = conn
            .prepare(&format!("INSERT INTO \"{}\" VALUES ({marks})", t.name))
            .expect("prepare insert");
        for row in &t.rows {
            stmt.execute(rusqlite::params_from_iter(row.iter()))
                .expect("insert row");
        }
    }
}

fn write_parquet(dir: &Path, db: &[Table]) {
    std::fs::create_dir_all(dir).expect("create Parquet directory");
    for t in db {
        let mut fields = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for (ci, (name, ty)) in t.columns.iter().enumerate() {
            let cells = t.rows.iter().map(|r| &r[ci]);
            let (dt, array): (DataType, ArrayRef) = match *ty {
                "INTEGER" => (
                    DataType::Int64,
                    Arc::new(
                        cells
                            .map(|v| {
                                if let Sql::Integer(x) = v {
                                    Some(*x)
                                } else {
                                    None
                                }
                            })
                            .collect::<Int64Array>(),
                    ),
                ),
                "REAL" => (
                    DataType::Float64,
                    Arc::new(
                        cells
                            .map(|v| if let Sql::Real(x) = v { Some(*x) } else { None })
                            .collect::<Float64Array>(),
                    ),
                ),
                _ => (
                    DataType::Utf8,
                    Arc::new(
                        cells
                            .map(|v| {
                                if let Sql::Text(x) = v {
                                    Some(x.clone())
                                } else {
                                    None
                                }
                            })
                            .collect::<StringArray>(),
                    ),
                ),
            };
            fields.push(Field::new(*name, dt, true));
            arrays.push(array);
        }
        let batch =
            RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("build batch");
        let file = std::fs::File::create(dir.join(format!("{}.parquet", t.name)))
            .expect("create Parquet file");
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None)
            .expect("Parquet writer");
        writer.write(&batch).expect("write Parquet");
        writer.close().expect("close Parquet");
    }
}

async fn run_with(
    plan: &Plan,
    src: &[Table],
    rel: &[Table],
    keys: Keys<'_>,
    report: Option<&Value>,
) -> Result<Verdict, VerifyError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let (sp, rp) = (
        dir.path().join("source.sqlite"),
        dir.path().join("release.sqlite"),
    );
    write_sqlite(&sp, src);
    write_sqlite(&rp, rel);
    let source = Warehouse::open(&sp).await.expect("open source");
    let release = Warehouse::open(&rp).await.expect("open release");
    verify_with_budget(
        plan,
        &source,
        &release,
        keys,
        report,
        crate::verify::ldiv::BUDGET,
    )
    .await
}

async fn run(src: &[Table], rel: &[Table], report: Option<&Value>) -> Verdict {
    run_with(&plan(2), src, rel, Keys::Preserved, report)
        .await
        .expect("verify runs")
}

fn failing(v: &Verdict) -> Vec<&'static str> {
    v.checks
        .iter()
        .filter(|c| !c.passed())
        .map(|c| c.name)
        .collect()
}

/// Asserts that check `name` failed with a violation mentioning every one of `parts`.
fn assert_caught(v: &Verdict, name: &str, parts: &[&str]) {
    let check = v.check(name).expect("check ran");
    assert!(
        check
            .violations
            .iter()
            .any(|m| parts.iter().all(|p| m.contains(p))),
        "expected a '{name}' violation mentioning {parts:?}; got:\n{}",
        v.summary()
    );
}

fn assert_passes(v: &Verdict, name: &str) {
    let check = v.check(name).expect("check ran");
    assert!(
        check.passed(),
        "expected '{name}' to pass; got:\n{}",
        v.summary()
    );
}

#[tokio::test]
async fn correct_release_passes() {
    let v = run(&source_db(), &release_db(), Some(&report())).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(v.checks.len(), 8);
    assert_eq!(
        (v.entities_released, v.equivalence_classes, v.smallest_ec),
        (4, 2, Some(2))
    );
    assert!(v.summary().starts_with(
        "PASS schema\nPASS declared roles\nPASS key atomicity\nPASS truthfulness\nPASS k-anonymity\nPASS labels\nPASS twins\nPASS counts\n"
    ));
}

#[tokio::test]
async fn isomorphic_children_in_different_order_share_an_ec() {
    // Entities 1 and 2 already list their courses in opposite orders; shuffling every
    // table's rows as well must change nothing, the key-less books included.
    let mut rel = release_db();
    for name in ["students", "courses", "books"] {
        table(&mut rel, name).rows.reverse();
    }
    table(&mut rel, "books").rows.rotate_left(2);
    let v = run(&source_db(), &rel, Some(&report())).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!((v.equivalence_classes, v.smallest_ec), (2, Some(2)));
}

#[tokio::test]
async fn group_of_one_breaks_k() {
    // A finer (still truthful) band splits entities 3 and 4 apart.
    let mut rel = release_db();
    set(&mut rel, "students", i(4), "yob", t("[1980,1984]"));
    let v = run(&source_db(), &rel, Some(&report())).await;
    assert_eq!(failing(&v), vec!["k-anonymity"], "{}", v.summary());
    assert_caught(&v, "k-anonymity", &["1 entity", "k = 2", "students key 4"]);
    assert_caught(&v, "k-anonymity", &["students key 3"]);
    assert_eq!((v.equivalence_classes, v.smallest_ec), (3, Some(1)));
}

#[tokio::test]
async fn label_that_is_not_an_ancestor_is_caught() {
    let mut rel = release_db();
    set(&mut rel, "students", i(1), "yob", t("[2000,2009]"));
    set(&mut rel, "students", i(2), "yob", t("[2000,2009]"));
    let v = run(&source_db(), &rel, None).await;
    assert_eq!(failing(&v), vec!["truthfulness"], "{}", v.summary());
    assert_caught(
        &v,
        "truthfulness",
        &["students key 1", "yob = '[2000,2009]'", "'1990'", "age_h"],
    );

    let mut rel = release_db();
    set(&mut rel, "courses", i(30), "course", t("Humanities"));
    set(&mut rel, "courses", i(40), "course", t("Humanities"));
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &["courses key 30", "course = 'Humanities'", "'Math'"],
    );

    // A key-less book whose label fits no source book of its course.
    let mut rel = release_db();
    set(&mut rel, "books", i(30), "title", t("CS books"));
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &["books row 5", "child of courses key 30"],
    );
}

#[tokio::test]
async fn changed_sensitive_value_is_caught() {
    let mut rel = release_db();
    set(&mut rel, "courses", i(10), "grade", i(91));
    let v = run(&source_db(), &rel, None).await;
    assert_eq!(failing(&v), vec!["truthfulness"], "{}", v.summary());
    assert_caught(
        &v,
        "truthfulness",
        &["courses key 10", "grade = '91'", "source value '90'"],
    );
}

#[tokio::test]
async fn dangling_foreign_key_is_caught() {
    let mut rel = release_db();
    set(&mut rel, "courses", i(30), "sid", i(99));
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "key atomicity",
        &["courses key 30", "(sid) = 99", "no released students row"],
    );
}

#[tokio::test]
async fn duplicated_primary_key_is_caught() {
    let mut rel = release_db();
    let copy = table(&mut rel, "students").rows[3].clone();
    table(&mut rel, "students").rows.push(copy);
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "key atomicity",
        &["students: primary key 4 appears 2 times"],
    );
    assert_caught(
        &v,
        "truthfulness",
        &["students key 4 and students key 4 both stand for source students key 4"],
    );

    // Three rows with one key are one finding, and a child under that key has three parents.
    let copy = table(&mut rel, "students").rows[3].clone();
    table(&mut rel, "students").rows.push(copy);
    let v = run(&source_db(), &rel, None).await;
    let atomicity = v.check("key atomicity").expect("the check ran");
    let duplicates: Vec<&String> = atomicity
        .violations
        .iter()
        .filter(|m| m.contains("appears"))
        .collect();
    assert_eq!(
        duplicates,
        ["students: primary key 4 appears 3 times"],
        "{}",
        v.summary()
    );
    assert_caught(
        &v,
        "key atomicity",
        &[
            "courses key 40",
            "(sid) = 4 matches 3 released students rows",
        ],
    );
}

#[tokio::test]
async fn null_primary_key_is_caught() {
    let mut rel = release_db();
    set(&mut rel, "courses", i(21), "cid", Sql::Null);
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "key atomicity",
        &["courses row 4: primary key (cid) is NULL"],
    );
    // Its book names a course that no released row has any more.
    assert_caught(
        &v,
        "key atomicity",
        &["books row", "(cid) = 21 matches no released courses row"],
    );
}

#[tokio::test]
async fn identifier_column_left_in_is_caught() {
    let mut rel = release_db();
    let students = table(&mut rel, "students");
    students.columns.insert(1, ("name", "TEXT"));
    for (row, name) in students.rows.iter_mut().zip(["Ann", "Bob", "Cy", "Di"]) {
        row.insert(1, t(name));
    }
    let v = run(&source_db(), &rel, None).await;
    // Both the plan's schema and the declarations' own reading catch it.
    assert_eq!(
        failing(&v),
        vec!["schema", "declared roles"],
        "{}",
        v.summary()
    );
    assert_caught(&v, "schema", &["students.name is an IDENTIFIER column"]);
    assert_caught(
        &v,
        "declared roles",
        &["students.name is released but declared IDENTIFIER"],
    );
}

#[tokio::test]
async fn child_moved_under_another_parent_is_caught() {
    let mut rel = release_db();
    set(&mut rel, "courses", i(30), "sid", i(4));
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &[
            "courses key 30",
            "students key 4",
            "belongs to students key 3",
        ],
    );

    // A key-less book moved to another course matches no source book there.
    let mut rel = release_db();
    set(&mut rel, "books", i(30), "cid", i(40));
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &[
            "books row",
            "child of courses key 40",
            "no source row under the same parent",
        ],
    );
}

#[tokio::test]
async fn extra_child_row_singles_an_entity_out() {
    // Student 4 really has two courses; releasing both (truthfully) makes its tree unlike
    // student 3's, so the EC {3, 4} falls apart: the extra course had to be suppressed.
    let mut src = source_db();
    table(&mut src, "courses")
        .rows
        .push(vec![i(41), i(4), t("Math"), i(50)]);
    let mut rel = release_db();
    table(&mut rel, "courses")
        .rows
        .push(vec![i(41), i(4), t("Science"), i(50)]);
    let v = run(&src, &rel, None).await;
    assert_eq!(failing(&v), vec!["k-anonymity"], "{}", v.summary());
    assert_caught(&v, "k-anonymity", &["students key 4"]);
    assert_caught(&v, "k-anonymity", &["students key 3"]);

    // A row the source never had is also untruthful.
    let mut rel = release_db();
    table(&mut rel, "books")
        .rows
        .push(vec![i(40), t("*"), f(30.0)]);
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &["books row 7", "more released rows than source rows"],
    );
    assert_caught(&v, "k-anonymity", &["students key 4"]);
}

#[tokio::test]
async fn wrong_report_counts_are_caught() {
    let mut r = report();
    r["tables"][2]["released"] = json!(7);
    let v = run(&source_db(), &release_db(), Some(&r)).await;
    assert_eq!(failing(&v), vec!["counts"], "{}", v.summary());
    assert_caught(&v, "counts", &["books released 7", "release has 6"]);
    assert_caught(
        &v,
        "counts",
        &["released 7 + suppressed 1 + orphans dropped 0 + without a parent 0 = 8, not rows in 7"],
    );

    let mut r = report();
    r["tables"][0]["rows_in"] = json!(5);
    r["tables"].as_array_mut().expect("tables array").remove(1);
    let v = run(&source_db(), &release_db(), Some(&r)).await;
    assert_caught(&v, "counts", &["students had 5 rows in; the source has 4"]);
    assert_caught(&v, "counts", &["no entry for table 'courses'"]);
}

/// The release with every key replaced by a pseudonym, and the map back.
fn pseudonymized() -> (Vec<Table>, KeyMap) {
    let sid = |k: i64| 7000 + 13 * k;
    let cid = |k: i64| 500 + 3 * k;
    let mut rel = release_db();
    let remap = |db: &mut Vec<Table>, table_name: &str, column: &str, g: &dyn Fn(i64) -> i64| {
        let tbl = table(db, table_name);
        let c = tbl.col(column);
        for row in &mut tbl.rows {
            if let Sql::Integer(k) = row[c] {
                row[c] = Sql::Integer(g(k));
            }
        }
    };
    remap(&mut rel, "students", "sid", &sid);
    remap(&mut rel, "courses", "sid", &sid);
    remap(&mut rel, "courses", "cid", &cid);
    remap(&mut rel, "books", "cid", &cid);
    let pairs = |keys: &[i64], g: &dyn Fn(i64) -> i64| -> Vec<KeyPair> {
        keys.iter()
            .map(|&k| KeyPair {
                source: vec![KeyValue::Int(k)],
                released: vec![KeyValue::Int(g(k))],
                group: None,
            })
            .collect()
    };
    let mut map = KeyMap::default();
    map.tables.insert(
        "students".to_string(),
        TableKeys::from_pairs(vec!["sid".to_string()], vec![], pairs(&[1, 2, 3, 4], &sid))
            .expect("one-column keys"),
    );
    map.tables.insert(
        "courses".to_string(),
        TableKeys::from_pairs(
            vec!["cid".to_string()],
            vec![],
            pairs(&[10, 11, 20, 21, 30, 40], &cid),
        )
        .expect("one-column keys"),
    );
    (rel, map)
}

/// `map` with table `table`'s pairs changed by `edit`.
fn edited(map: &KeyMap, table: &str, edit: impl FnOnce(&mut Vec<KeyPair>)) -> KeyMap {
    let mut map = map.clone();
    let keys = map.tables.get_mut(table).expect("the map has the table");
    let mut pairs: Vec<KeyPair> = keys.pairs().collect();
    edit(&mut pairs);
    *keys = TableKeys::from_pairs(keys.columns.clone(), keys.released_columns.clone(), pairs)
        .expect("edits keep the arity");
    map
}

#[tokio::test]
async fn pseudonymized_keys_are_traced_through_the_key_map() {
    let (rel, map) = pseudonymized();
    let v = run_with(
        &plan(2),
        &source_db(),
        &rel,
        Keys::Map(&map),
        Some(&report()),
    )
    .await
    .expect("verify runs");
    assert!(v.passed(), "{}", v.summary());
    assert_eq!((v.equivalence_classes, v.smallest_ec), (2, Some(2)));

    // Without the map the pseudonyms name no source row.
    let v = run_with(&plan(2), &source_db(), &rel, Keys::Preserved, None)
        .await
        .expect("verify runs");
    assert_caught(
        &v,
        "truthfulness",
        &["students key 7013: the key", "is not in the source"],
    );

    // A map that sends course 10's pseudonym to course 20 moves it to another student.
    let bad = edited(&map, "courses", |pairs| {
        pairs[0].source = vec![KeyValue::Int(20)];
        pairs[2].source = vec![KeyValue::Int(10)];
    });
    let v = run_with(&plan(2), &source_db(), &rel, Keys::Map(&bad), None)
        .await
        .expect("verify runs");
    assert_caught(
        &v,
        "truthfulness",
        &["courses key 530", "belongs to students key 2"],
    );
    assert_caught(
        &v,
        "truthfulness",
        &["courses key 560", "belongs to students key 1"],
    );

    let missing = edited(&map, "students", |pairs| {
        pairs.remove(0);
    });
    let v = run_with(&plan(2), &source_db(), &rel, Keys::Map(&missing), None)
        .await
        .expect("verify runs");
    assert_caught(
        &v,
        "truthfulness",
        &["students key 7013: the key map has no source key for it"],
    );

    // A released key listed twice with two source keys: the first pair counts.
    let mut doubled = None;
    let twice = edited(&map, "students", |pairs| {
        let mut again = pairs[0].clone();
        again.source = pairs[1].source.clone();
        doubled = Some((again.released.clone(), pairs[0].source.clone()));
        pairs.push(again);
    });
    let (released, kept) = doubled.expect("the map has students");
    let v = run_with(&plan(2), &source_db(), &rel, Keys::Map(&twice), None)
        .await
        .expect("verify runs");
    let show = |k: &[KeyValue]| k[0].to_string();
    assert_caught(
        &v,
        "truthfulness",
        &[&format!(
            "the key map sends students key {} to two source keys ({} and",
            show(&released),
            show(&kept)
        )],
    );
    let found = v.check("truthfulness").map(|c| c.violation_count);
    assert_eq!(found, Some(1), "{}", v.summary());

    // Released keys listed again with source keys no row has: nothing claims those twice,
    // so the release is checked in partitions too, and each repeat is found once there,
    // in its released key's partition.
    let again = edited(&map, "students", |pairs| {
        for (i, at) in [0, 2, 4].into_iter().enumerate() {
            let mut again = pairs[at].clone();
            again.source = vec![KeyValue::Int(900_000 + i as i64)];
            pairs.push(again);
        }
    });
    let v = run_with(&plan(2), &source_db(), &rel, Keys::Map(&again), None)
        .await
        .expect("verify runs");
    for lost in ["900000)", "900001)", "900002)"] {
        assert_caught(&v, "truthfulness", &["to two source keys", lost]);
    }
    let found = v.check("truthfulness").map(|c| c.violation_count);
    assert_eq!(found, Some(3), "{}", v.summary());

    let mut no_table = map.clone();
    no_table.tables.remove("courses");
    let err = run_with(&plan(2), &source_db(), &rel, Keys::Map(&no_table), None)
        .await
        .expect_err("cannot trace");
    assert!(
        matches!(err, VerifyError::KeyMapMissingTable { ref table } if table == "courses"),
        "{err}"
    );
}

#[tokio::test]
async fn parquet_release_passes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sp = dir.path().join("source.sqlite");
    let rp = dir.path().join("release");
    write_sqlite(&sp, &source_db());
    write_parquet(&rp, &release_db());
    let source = Warehouse::open(&sp).await.expect("open source");
    let release = Warehouse::open(&rp).await.expect("open release");
    let v = verify_with_budget(
        &plan(2),
        &source,
        &release,
        Keys::Preserved,
        Some(&report()),
        crate::verify::ldiv::BUDGET,
    )
    .await
    .expect("verify runs");
    assert!(v.passed(), "{}", v.summary());
    // The release is read from files a batch at a time: it is checked in partitions, not
    // handed back to the whole check.
    let keys = Keys::Preserved;
    let hiers = hierarchies(&plan(2)).expect("hierarchies");
    let plan = plan(2);
    let setting = partitioned::Setting {
        plan: &plan,
        source: &source,
        release: &release,
        keys: &keys,
        hiers: &hiers,
        budget: crate::verify::ldiv::BUDGET,
        tasks: None,
    };
    let first = [Check::new("schema"), Check::new("declared roles")];
    let split = partitioned::verify(&setting, 3, first, Some(&report()))
        .await
        .expect("verify runs")
        .expect("checked in partitions");
    assert_eq!(split.class_sizes, v.class_sizes);
}

#[tokio::test]
async fn dimension_and_extra_tables_are_checked() {
    let mut rel = release_db();
    set(&mut rel, "catalog", t("CS"), "dept", t("Eng"));
    rel.push(Table::new(
        "names",
        &[("sid", "INTEGER"), ("name", "TEXT")],
        vec![vec![i(1), t("Ann")]],
    ));
    let v = run(&source_db(), &rel, None).await;
    assert_eq!(failing(&v), vec!["schema"], "{}", v.summary());
    assert_caught(
        &v,
        "schema",
        &[
            "dimension table 'catalog' is not an exact copy",
            "1 source row(s) missing",
        ],
    );
    assert_caught(&v, "schema", &["release table 'names'", "remove it"]);
}

#[tokio::test]
async fn qi_columns_must_be_text_and_in_source_order() {
    let mut rel = release_db();
    let students = table(&mut rel, "students");
    // gpa and enrolled swapped.
    students.columns.swap(2, 3);
    for row in &mut students.rows {
        row.swap(2, 3);
    }
    let v = run(&source_db(), &rel, None).await;
    assert_caught(&v, "schema", &["students: columns are not in source order"]);
    assert_passes(&v, "truthfulness");

    // Ungeneralized years left as integers: truthful, but the column is no longer text.
    let mut rel = release_db();
    let students = table(&mut rel, "students");
    students.columns[1].1 = "INTEGER";
    for (row, year) in students.rows.iter_mut().zip([1990, 1993, 1981, 1984]) {
        row[1] = i(year);
    }
    let v = run(&source_db(), &rel, None).await;
    assert_caught(
        &v,
        "schema",
        &["students.yob is a QI column but is released as Int64"],
    );
    assert_passes(&v, "truthfulness");
}

#[tokio::test]
async fn missing_table_is_an_error_not_a_verdict() {
    let mut rel = release_db();
    rel.retain(|t| t.name != "books");
    let err = run_with(&plan(2), &source_db(), &rel, Keys::Preserved, None)
        .await
        .expect_err("cannot verify");
    assert!(
        matches!(err, VerifyError::MissingTable { side: "release", ref table } if table == "books"),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'));
}

#[tokio::test]
async fn summary_lists_at_most_five_violations_per_check() {
    let mut rel = release_db();
    for row in &mut table(&mut rel, "courses").rows {
        if let Sql::Integer(g) = row[3] {
            row[3] = Sql::Integer(g + 1);
        }
    }
    let v = run(&source_db(), &rel, None).await;
    let check = v.check("truthfulness").expect("check ran");
    assert_eq!(check.violation_count, 6);
    let summary = v.summary();
    assert!(
        summary.contains("FAIL truthfulness: 6 violations\n"),
        "{summary}"
    );
    assert_eq!(
        summary.lines().filter(|l| l.starts_with("  - ")).count(),
        5,
        "{summary}"
    );
    assert!(summary.contains("  ... and 1 more\n"), "{summary}");
}

#[tokio::test]
async fn null_qi_source_values_are_their_own_leaf() {
    let mut src = source_db();
    set(&mut src, "students", i(3), "enrolled", Sql::Null);
    set(&mut src, "students", i(4), "enrolled", Sql::Null);
    let mut rel = release_db();
    set(&mut rel, "students", i(3), "enrolled", Sql::Null);
    set(&mut rel, "students", i(4), "enrolled", t("*"));
    let v = run(&src, &rel, None).await;
    // Truthful, but NULL and * are different labels: 3 and 4 part ways.
    assert_passes(&v, "truthfulness");
    assert_caught(&v, "k-anonymity", &["students key 3"]);

    set(&mut rel, "students", i(3), "enrolled", t("2020"));
    let v = run(&src, &rel, None).await;
    assert_caught(
        &v,
        "truthfulness",
        &["students key 3", "enrolled = '2020'", "NULL"],
    );
}

#[test]
fn a_check_absorbing_a_later_one_keeps_what_one_check_would() {
    let (mut whole, mut first, mut later) = (Check::new("x"), Check::new("x"), Check::new("x"));
    for i in 0..2 * KEPT_VIOLATIONS + 500 {
        whole.record(i.to_string());
        if i < 700 {
            first.record(i.to_string());
        } else {
            later.record(i.to_string());
        }
    }
    first.absorb(later);
    assert_eq!(first.violation_count, whole.violation_count);
    assert_eq!(first.violations, whole.violations);
}

/// The "declared roles" check reads the declarations, not the planner's roles: a column the
/// plan publishes (as a planner that took a composite key's data column for a key would)
/// but no declaration gives a role is caught, naming table and column.
#[tokio::test]
async fn a_released_column_without_a_declared_role_is_caught() {
    let mut p = plan(2);
    p.labels
        .retain(|l| !(l.table == "books" && l.column.as_deref() == Some("price")));
    let v = run_with(&p, &source_db(), &release_db(), Keys::Preserved, None)
        .await
        .expect("verify runs");
    assert_eq!(failing(&v), vec!["declared roles"], "{}", v.summary());
    assert_caught(
        &v,
        "declared roles",
        &["books.price is released but has no declared role"],
    );
}

/// The university's plan declared `algorithm = 'hybrid'` with `p` (None: not written).
fn hybrid_plan(p: Option<f64>) -> Plan {
    let mut plan = plan(2);
    plan.params.algorithm.name = Some(("hybrid".to_string(), Pos::default()));
    plan.params.algorithm.options = p
        .map(|p| crate::plan::RawOption {
            name: "p".to_string(),
            value: crate::policy::Value::Number(p),
            pos: Pos::default(),
        })
        .into_iter()
        .collect();
    plan
}

#[tokio::test]
async fn a_hybrid_release_is_held_to_its_declared_budget_of_untruthful_cells() {
    // Students 1 and 2 relocated into a decade that is not theirs: two untruthful cells,
    // k still met. 21 source QI cells (students 4 x 2, courses 6, books 7).
    let mut rel = release_db();
    set(&mut rel, "students", i(1), "yob", t("[2000,2009]"));
    set(&mut rel, "students", i(2), "yob", t("[2000,2009]"));
    let at = |p: Option<f64>| {
        let rel = rel.clone();
        async move {
            run_with(&hybrid_plan(p), &source_db(), &rel, Keys::Preserved, None)
                .await
                .expect("verify runs")
        }
    };
    // p = 10: floor(2.1) = 2 cells allowed, the count met exactly.
    let v = at(Some(10.0)).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(v.checks.len(), 9);
    assert_passes(&v, "relocation budget");
    // p = 9: floor(1.89) = 1, one fewer than the release has; truthfulness counts, it does
    // not fail.
    let v = at(Some(9.0)).await;
    assert_eq!(failing(&v), vec!["relocation budget"], "{}", v.summary());
    assert_caught(
        &v,
        "relocation budget",
        &[
            "2 QI cells are neither the source value nor an ancestor of it (students 2)",
            "budget of 1 (p = 9% of 21 QI cells)",
        ],
    );
    // Unwritten, p is 1: floor(0.21) = 0.
    let v = at(None).await;
    assert_caught(&v, "relocation budget", &["budget of 0 (p = 1% of 21"]);
    // A hybrid release without relocation passes; a changed sensitive cell still fails
    // truthfulness alone.
    let v = run_with(
        &hybrid_plan(Some(10.0)),
        &source_db(),
        &release_db(),
        Keys::Preserved,
        None,
    )
    .await
    .expect("verify runs");
    assert!(v.passed(), "{}", v.summary());
    let mut changed = release_db();
    set(&mut changed, "courses", i(10), "grade", i(91));
    let v = run_with(
        &hybrid_plan(Some(10.0)),
        &source_db(),
        &changed,
        Keys::Preserved,
        None,
    )
    .await
    .expect("verify runs");
    assert_eq!(failing(&v), vec!["truthfulness"], "{}", v.summary());
}
