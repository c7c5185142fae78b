//! Seeded, deterministic source warehouses reproducing the seeds' setups.
//!
//! - [`table2`]: the running example of 001 (Table II): four students, their courses and the
//!   books they bought for them. The seed's table is unreadable in the text conversion; the
//!   fixture is reconstructed from Tables V/VI and the prose (see [`table2`]).
//! - [`university`] (`university.rs`): the synthetic student database of 001 Sec. V (1000
//!   students, 22 courses, 1 obligatory + 2-3 technical + 2-3 non-technical electives, 2-4
//!   textbooks per course).
//! - [`synthetic`] (`synthetic.rs`): the thesis's syntheticS / syntheticT (000 Sec. 2.4: 1000
//!   students of a CS program, about 20 courses each, 0-2 books per course; syntheticT adds
//!   the college year between student and courses).
//! - [`tpch`] (`tpch.rs`): TPC-H through the `tpchgen` generators (customer, orders, lineitem
//!   and their dimension tables), deterministic per scale factor.
//!
//! Everything random is drawn from one `ChaCha8Rng` seeded with the caller's seed, with integer
//! arithmetic only (no `ln`/`cos`, whose last bits differ between libms), so a seed names the
//! same warehouse on every run and platform. Each generator's catalog is the single source of
//! its generated values and of the hierarchy files under `fixtures/hierarchies/` rendered from
//! it; unit tests keep the files equal to the rendering.
//!
//! TPC-H's columns are converted to the types relanon reads back from SQLite and Parquet
//! alike (declarations: `sql/tpch.sql`, hierarchies as `SELECT`s over the dimensions).

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::warehouse::{ForeignKey, ReleaseSet, ReleaseTable};

mod synthetic;
#[cfg(test)]
mod testutil;
mod tpch;
mod university;

pub use synthetic::{
    synthetic, synthetic_book_hierarchy_csv, synthetic_course_hierarchy_csv,
    synthetic_major_hierarchy_csv, synthetic_year_hierarchy_csv, Major, Requirement,
    SyntheticCourse, CORE_PER_STUDENT, ELECTIVES_MAX, ELECTIVES_MIN, LETTER_GRADES,
    SYNTHETIC_COURSES, SYNTHETIC_MAJORS, SYNTHETIC_STUDENTS, YEAR_LEVELS,
};

pub use tpch::{tpch, tpch_streams, TpchError};

pub use university::{
    university, university_book_hierarchy_csv, university_course_hierarchy_csv, CourseSpec,
    Department, Pool, Textbook, UNIVERSITY_COURSES, UNIVERSITY_DEPARTMENTS, UNIVERSITY_STUDENTS,
};

// ---------------------------------------------------------------------------------------------
// 001 Table II
// ---------------------------------------------------------------------------------------------

/// `T_p`: (sid, gpa).
const TABLE2_STUDENTS: [(&str, f64); 4] = [("S1", 3.72), ("S2", 2.34), ("S3", 3.12), ("S4", 4.00)];

/// `T_1`: (scid, sid, course, grade). Numbered in the order the paper lists them, which makes
/// S4's History enrollment SC10 with grade 98, as the prose says.
const TABLE2_COURSES: [(&str, &str, &str, i64); 11] = [
    ("SC1", "S1", "Math", 93),
    ("SC2", "S1", "Physics", 91),
    ("SC3", "S1", "History", 85),
    ("SC4", "S2", "CS", 78),
    ("SC5", "S2", "Physics", 62),
    ("SC6", "S2", "Religion", 42),
    ("SC7", "S3", "History", 85),
    ("SC8", "S3", "Religion", 75),
    ("SC9", "S3", "Physics", 77),
    ("SC10", "S4", "History", 98),
    ("SC11", "S4", "Religion", 96),
];

/// `T_2`: (bid, scid, book, price). From the prose: S1 buys Discrete for Math and Calc, Dyn
/// for Physics; S2 buys Discrete for CS and Dyn for Physics; S4 buys Am.Hist for History and
/// is the only student who does (001 Sec. II: the query History + Am.Hist returns {S4}). The
/// History / Religion books of S1..S4 and S3's Physics book are invented, chosen so that
/// S1~S2 and S3~S4 still pair up as in Table III and Fig. 3 (S1's History against S2's
/// Religion under Social, a book left over to suppress).
const TABLE2_BOOKS: [(&str, &str, &str, f64); 12] = [
    ("B1", "SC1", "Discrete", 45.00),
    ("B2", "SC2", "Calc", 60.00),
    ("B3", "SC2", "Dyn", 55.00),
    ("B4", "SC3", "Eu.Hist", 30.00),
    ("B5", "SC4", "Discrete", 42.50),
    ("B6", "SC5", "Dyn", 55.00),
    ("B7", "SC6", "World Rel", 25.00),
    ("B8", "SC7", "Eu.Hist", 28.00),
    ("B9", "SC8", "Theology", 35.00),
    ("B10", "SC9", "Optics", 50.00),
    ("B11", "SC10", "Am.Hist", 40.00),
    ("B12", "SC11", "World Rel", 25.00),
];

/// Fig. 1's course DGH, rows `leaf, parent` (root `*` implied). Eight leaves, so
/// LM("Science") = (4 - 1) / (8 - 1) = 3/7 as in 001 Def. 8's example.
pub const TABLE2_COURSE_HIERARCHY: [[&str; 2]; 8] = [
    ["Math", "Science"],
    ["CS", "Science"],
    ["Physics", "Science"],
    ["Chemistry", "Science"],
    ["History", "Social"],
    ["Religion", "Social"],
    ["Economics", "Social"],
    ["Philosophy", "Social"],
];

/// Fig. 1's book DGH (reconstructed), rows `leaf, subject, area` (root `*` implied).
pub const TABLE2_BOOK_HIERARCHY: [[&str; 3]; 8] = [
    ["Discrete", "Math books", "Science books"],
    ["Calc", "Math books", "Science books"],
    ["Dyn", "Physics books", "Science books"],
    ["Optics", "Physics books", "Science books"],
    ["Am.Hist", "History books", "Social books"],
    ["Eu.Hist", "History books", "Social books"],
    ["World Rel", "Religion books", "Social books"],
    ["Theology", "Religion books", "Social books"],
];

/// 001 Table II as a warehouse: `students(sid, gpa)`, `courses(scid, sid, course, grade)`,
/// `books(bid, scid, book, price)`, with the paper's own labels (`S1`, `SC10`) as text keys so
/// releases and tests can be read against the paper.
///
/// Reconstructed: the seed's Table II is garbled in the text conversion. Students, courses and
/// grades come from Tables V/VI (which list the same rows); the books are partly from the prose
/// and partly invented (see `TABLE2_BOOKS`). `fixtures/table2/*.csv` holds the same data.
pub fn table2() -> ReleaseSet {
    let students = batch(
        vec![
            text_field("sid"),
            Field::new("gpa", DataType::Float64, false),
        ],
        vec![
            text_column(TABLE2_STUDENTS.iter().map(|s| s.0)),
            Arc::new(Float64Array::from_iter_values(
                TABLE2_STUDENTS.iter().map(|s| s.1),
            )),
        ],
    );
    let courses = batch(
        vec![
            text_field("scid"),
            text_field("sid"),
            text_field("course"),
            Field::new("grade", DataType::Int64, false),
        ],
        vec![
            text_column(TABLE2_COURSES.iter().map(|c| c.0)),
            text_column(TABLE2_COURSES.iter().map(|c| c.1)),
            text_column(TABLE2_COURSES.iter().map(|c| c.2)),
            Arc::new(Int64Array::from_iter_values(
                TABLE2_COURSES.iter().map(|c| c.3),
            )),
        ],
    );
    let books = batch(
        vec![
            text_field("bid"),
            text_field("scid"),
            text_field("book"),
            Field::new("price", DataType::Float64, false),
        ],
        vec![
            text_column(TABLE2_BOOKS.iter().map(|b| b.0)),
            text_column(TABLE2_BOOKS.iter().map(|b| b.1)),
            text_column(TABLE2_BOOKS.iter().map(|b| b.2)),
            Arc::new(Float64Array::from_iter_values(
                TABLE2_BOOKS.iter().map(|b| b.3),
            )),
        ],
    );
    family(students, courses, books)
}

/// The three CSV files of `fixtures/table2/` (file name, content), rendered from the same rows
/// as [`table2`] so the fixture cannot drift from it.
pub fn table2_csv() -> Vec<(&'static str, String)> {
    let mut students = String::from("sid,gpa\n");
    for (sid, gpa) in TABLE2_STUDENTS {
        students.push_str(&format!("{sid},{gpa:.2}\n"));
    }
    let mut courses = String::from("scid,sid,course,grade\n");
    for (scid, sid, course, grade) in TABLE2_COURSES {
        courses.push_str(&format!("{scid},{sid},{course},{grade}\n"));
    }
    let mut books = String::from("bid,scid,book,price\n");
    for (bid, scid, book, price) in TABLE2_BOOKS {
        books.push_str(&format!("{bid},{scid},{book},{price:.2}\n"));
    }
    vec![
        ("students.csv", students),
        ("courses.csv", courses),
        ("books.csv", books),
    ]
}

// ---------------------------------------------------------------------------------------------
// Shared draws
// ---------------------------------------------------------------------------------------------

/// One value drawn with probability proportional to its weight; `None` if no weight is > 0.
fn weighted_pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[(T, u32)]) -> Option<T> {
    let total: u32 = items.iter().map(|&(_, w)| w).sum();
    if total == 0 {
        return None;
    }
    let mut r = rng.random_range(0..total);
    for &(item, w) in items {
        if r < w {
            return Some(item);
        }
        r -= w;
    }
    None
}

/// `n` distinct items drawn one at a time by weight, each draw removing its item (fewer if
/// the pool runs out). Successive draws rather than `choose_multiple_weighted`, whose
/// float keys would tie the output to `powf`'s last bits.
fn weighted_sample<T: Copy + PartialEq>(
    rng: &mut ChaCha8Rng,
    items: &[(T, u32)],
    n: usize,
) -> Vec<T> {
    let mut left: Vec<(T, u32)> = items.iter().copied().filter(|&(_, w)| w > 0).collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let Some(item) = weighted_pick(rng, &left) else {
            break;
        };
        left.retain(|&(i, _)| i != item);
        out.push(item);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Arrow plumbing
// ---------------------------------------------------------------------------------------------

fn text_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn text_column<'a>(values: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

fn batch(fields: Vec<Field>, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .expect("generator builds every column with its field's type and the same row count")
}

/// The students <- courses <- books family both generators share, keys included.
fn family(students: RecordBatch, courses: RecordBatch, books: RecordBatch) -> ReleaseSet {
    let key = |c: &str| vec![c.to_string()];
    ReleaseSet {
        tables: vec![
            ReleaseTable {
                name: "students".into(),
                batch: students,
                primary_key: key("sid"),
                foreign_keys: vec![],
            },
            ReleaseTable {
                name: "courses".into(),
                batch: courses,
                primary_key: key("scid"),
                foreign_keys: vec![ForeignKey {
                    columns: key("sid"),
                    ref_table: "students".into(),
                    ref_columns: key("sid"),
                }],
            },
            ReleaseTable {
                name: "books".into(),
                batch: books,
                primary_key: key("bid"),
                foreign_keys: vec![ForeignKey {
                    columns: key("scid"),
                    ref_table: "courses".into(),
                    ref_columns: key("scid"),
                }],
            },
        ],
        views: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use std::collections::{BTreeSet, HashMap, HashSet};

    #[test]
    fn table2_matches_the_paper() {
        let set = table2();
        let courses = table(&set, "courses");
        let books = table(&set, "books");
        let scids = texts(courses, "scid");
        let sids = texts(courses, "sid");
        let names = texts(courses, "course");
        let grades = ints(courses, "grade");
        // 001 Sec. II: S4's History enrollment is SC10 with grade 98.
        let i = scids.iter().position(|s| s == "SC10").expect("SC10");
        assert_eq!(
            (sids[i].as_str(), names[i].as_str(), grades[i]),
            ("S4", "History", 98)
        );
        // 001 Sec. II: History + Am.Hist identifies S4 alone.
        let course_of: HashMap<&str, (&str, &str)> = scids
            .iter()
            .zip(sids.iter().zip(&names))
            .map(|(sc, (s, c))| (sc.as_str(), (s.as_str(), c.as_str())))
            .collect();
        let mut who = BTreeSet::new();
        for (scid, title) in texts(books, "scid").iter().zip(texts(books, "book")) {
            let (sid, course) = course_of[scid.as_str()];
            if course == "History" && title == "Am.Hist" {
                who.insert(sid.to_string());
            }
        }
        assert_eq!(who, BTreeSet::from(["S4".to_string()]));
        // Every value is a leaf of Fig. 1's DGHs.
        let course_leaves: HashSet<&str> = TABLE2_COURSE_HIERARCHY.iter().map(|r| r[0]).collect();
        let book_leaves: HashSet<&str> = TABLE2_BOOK_HIERARCHY.iter().map(|r| r[0]).collect();
        assert!(names.iter().all(|c| course_leaves.contains(c.as_str())));
        assert!(texts(books, "book")
            .iter()
            .all(|b| book_leaves.contains(b.as_str())));
        // LM("Science") = 3/7: four of eight leaves are Science.
        let science = TABLE2_COURSE_HIERARCHY
            .iter()
            .filter(|r| r[1] == "Science")
            .count();
        assert_eq!((science, TABLE2_COURSE_HIERARCHY.len()), (4, 8));
    }

    #[test]
    fn declarations_parse() {
        for file in ["sql/table2.sql", "sql/university.sql"] {
            let text = std::fs::read_to_string(manifest_path(file)).expect("declarations file");
            let policy = crate::decl::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(
                policy.entity.is_some() && policy.anonymize.is_some(),
                "{file}"
            );
        }
    }

    #[test]
    fn table2_fixture_and_declarations_agree() {
        for (file, content) in table2_csv() {
            check_fixture(&format!("fixtures/table2/{file}"), &content);
        }
        // The CSV reader infers the same types table2() declares.
        let set = table2();
        for t in &set.tables {
            let path = manifest_path(&format!("fixtures/table2/{}.csv", t.name));
            let file = std::fs::File::open(&path).expect("fixture file");
            let (schema, _) = arrow::csv::reader::Format::default()
                .with_header(true)
                .infer_schema(file, None)
                .expect("infer schema");
            let inferred: Vec<(&str, &DataType)> = schema
                .fields()
                .iter()
                .map(|f| (f.name().as_str(), f.data_type()))
                .collect();
            let declared_schema = t.batch.schema();
            let declared: Vec<(&str, &DataType)> = declared_schema
                .fields()
                .iter()
                .map(|f| (f.name().as_str(), f.data_type()))
                .collect();
            assert_eq!(inferred, declared, "{}", t.name);
        }
        // The declarations inline Fig. 1's DGHs with the same rows.
        let sql = std::fs::read_to_string(manifest_path("sql/table2.sql")).expect("table2.sql");
        for row in TABLE2_COURSE_HIERARCHY {
            assert!(
                sql.contains(&format!("('{}', '{}')", row[0], row[1])),
                "{row:?}"
            );
        }
        for row in TABLE2_BOOK_HIERARCHY {
            let text = format!("('{}', '{}', '{}')", row[0], row[1], row[2]);
            assert!(sql.contains(&text), "{row:?}");
        }
    }
}
