//! Check 8, "l-diversity", on hand-made releases: ECs of students whose courses all
//! generalize to 'Science', so a student's courses are interchangeable siblings and the
//! verifier has to find a diverse matching of them itself.

use super::*;
use crate::plan::Diversity;
use crate::verify::ldiv::BUDGET;

/// One student of a hand-made EC: key, year of birth, GPA (None: NULL) and courses, each a
/// grade and the prices of its books.
struct Student {
    sid: i64,
    yob: i64,
    gpa: Option<f64>,
    courses: Vec<(i64, &'static [f64])>,
}

/// A student whose courses have no books.
fn student(sid: i64, gpa: f64, grades: &[i64]) -> Student {
    Student {
        sid,
        yob: 1989 + sid,
        gpa: Some(gpa),
        courses: grades.iter().map(|&g| (g, &[][..])).collect(),
    }
}

/// Source and release of `students`, in the order given: every student born in the
/// 1990s and enrolled in March 2021, courses alternating Math and CS (both 'Science').
fn ec(students: &[Student]) -> (Vec<Table>, Vec<Table>) {
    let gpa = |s: &Student| s.gpa.map_or(Sql::Null, f);
    let (mut courses, mut books) = (Vec::new(), Vec::new());
    for s in students {
        for (j, &(g, prices)) in s.courses.iter().enumerate() {
            let name = if j % 2 == 0 { "Math" } else { "CS" };
            let cid = 10 * s.sid + j as i64;
            courses.push((cid, s.sid, name, g));
            books.extend(prices.iter().map(|&p| vec![i(cid), t("Algebra"), f(p)]));
        }
    }
    let book_cols: &[(&str, &str)] = &[("cid", "INTEGER"), ("title", "TEXT"), ("price", "REAL")];
    let course_cols: &[(&str, &str)] = &[
        ("cid", "INTEGER"),
        ("sid", "INTEGER"),
        ("course", "TEXT"),
        ("grade", "INTEGER"),
    ];
    let src = vec![
        Table::new(
            "students",
            &[
                ("sid", "INTEGER"),
                ("name", "TEXT"),
                ("yob", "INTEGER"),
                ("gpa", "REAL"),
                ("enrolled", "TEXT"),
            ],
            students
                .iter()
                .map(|s| vec![i(s.sid), t("X"), i(s.yob), gpa(s), t("2021-03-05")])
                .collect(),
        ),
        Table::new(
            "courses",
            course_cols,
            courses
                .iter()
                .map(|&(cid, sid, name, g)| vec![i(cid), i(sid), t(name), i(g)])
                .collect(),
        ),
        Table::new("books", book_cols, books.clone()),
        catalog(),
    ];
    let rel = vec![
        Table::new(
            "students",
            &[
                ("sid", "INTEGER"),
                ("yob", "TEXT"),
                ("gpa", "REAL"),
                ("enrolled", "TEXT"),
            ],
            students
                .iter()
                .map(|s| vec![i(s.sid), t("[1990,1999]"), gpa(s), t("2021-03")])
                .collect(),
        ),
        Table::new(
            "courses",
            course_cols,
            courses
                .iter()
                .map(|&(cid, sid, _, g)| vec![i(cid), i(sid), t("Science"), i(g)])
                .collect(),
        ),
        Table::new("books", book_cols, books.clone()),
        catalog(),
    ];
    (src, rel)
}

/// The test plan under l-diversity, GPA bucketed by `buckets` when given.
fn plan_l(l: usize, diversity: Diversity, buckets: Option<&[f64]>) -> Plan {
    let mut p = plan(l);
    p.params.model = Model::LDiversity { l, diversity };
    for c in &mut p.tables[0].columns {
        if c.name == "gpa" {
            c.role = ColumnRole::Sensitive {
                buckets: buckets.map(<[f64]>::to_vec),
            };
        }
    }
    p
}

/// [`plan_l`] with the books' price SENSITIVE too: a third level of interchangeable vertices.
fn plan_priced(l: usize) -> Plan {
    let mut p = plan_l(l, Diversity::Probabilistic, None);
    for c in &mut p.tables[2].columns {
        if c.name == "price" {
            c.role = ColumnRole::Sensitive { buckets: None };
        }
    }
    p
}

async fn run_l(plan: &Plan, students: &[Student], budget: usize) -> Verdict {
    let (src, rel) = ec(students);
    let dir = tempfile::tempdir().expect("temp dir");
    let (sp, rp) = (
        dir.path().join("source.sqlite"),
        dir.path().join("release.sqlite"),
    );
    write_sqlite(&sp, &src);
    write_sqlite(&rp, &rel);
    let source = Warehouse::open(&sp).await.expect("open source");
    let release = Warehouse::open(&rp).await.expect("open release");
    verify_with_budget(plan, &source, &release, Keys::Preserved, None, budget)
        .await
        .expect("verify runs")
}

async fn run3(students: &[Student]) -> Verdict {
    run_l(&plan_l(3, Diversity::Probabilistic, None), students, BUDGET).await
}

/// Three students whose first-listed courses (by row and by key) carry 90, 90, 80: matching
/// by order fails, but 90/70/80 and 80/90/70 is a 3-diverse matching.
fn order_trap() -> Vec<Student> {
    vec![
        student(1, 3.1, &[90, 80]),
        student(2, 3.5, &[90, 70]),
        student(3, 3.9, &[80, 70]),
    ]
}

#[tokio::test]
async fn diverse_matching_is_found_against_release_order() {
    let v = run3(&order_trap()).await;
    assert!(v.passed(), "{}", v.summary());
    assert_eq!(failing(&v), Vec::<&str>::new());
    assert!(
        v.summary().contains("PASS l-diversity\n"),
        "{}",
        v.summary()
    );
    assert_eq!((v.equivalence_classes, v.smallest_ec), (1, Some(3)));
}

#[tokio::test]
async fn l_diversity_runs_only_under_its_model() {
    let v = run(&source_db(), &release_db(), None).await;
    assert!(v.check("l-diversity").is_none(), "{}", v.summary());
}

#[tokio::test]
async fn homogeneous_root_value_fails() {
    let v = run3(&[
        student(1, 3.5, &[90, 80]),
        student(2, 3.5, &[90, 70]),
        student(3, 3.9, &[80, 70]),
    ])
    .await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &[
            "equivalence class of 3 entities (students key 1, students key 2, students key 3)",
            "is not 3-diverse",
            "students.gpa at students has value '3.5' 2 times in 3",
        ],
    );
}

#[tokio::test]
async fn child_position_no_matching_can_diversify_fails() {
    // Student 1's courses both carry 90 and so does one of student 2's: whichever course of
    // student 1 it meets holds 90 twice, so no split into 3-diverse pairs exists.
    let v = run3(&[
        student(1, 3.1, &[90, 90]),
        student(2, 3.5, &[90, 80]),
        student(3, 3.9, &[80, 70]),
    ])
    .await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &[
            "students key 1",
            "no matching of the 2 interchangeable students > courses(course = 'Science') vertices",
            "courses.grade per member: {'90', '90'}, {'90', '80'}, {'80', '70'}",
        ],
    );

    // With one course each there is no choice: the forced group names its value.
    let v = run3(&[
        student(1, 3.1, &[90]),
        student(2, 3.5, &[90]),
        student(3, 3.9, &[80]),
    ])
    .await;
    assert_caught(
        &v,
        "l-diversity",
        &["courses.grade at students > courses(course = 'Science') has value '90' 2 times in 3"],
    );
}

#[tokio::test]
async fn bucketed_values_count_by_bucket() {
    let buckets = [0.0, 2.0, 3.0, 3.5, 4.0];
    let plan = plan_l(3, Diversity::Probabilistic, Some(&buckets));
    let gpas = |a: f64, b: f64, c: f64| {
        let mut s = order_trap();
        for (st, g) in s.iter_mut().zip([a, b, c]) {
            st.gpa = Some(g);
        }
        s
    };
    // Different buckets pass; 3.5 opens the last bucket, which also holds 4.
    for (a, b, c) in [(2.5, 3.4, 3.5), (1.0, 3.0, 4.0)] {
        let v = run_l(&plan, &gpas(a, b, c), BUDGET).await;
        assert!(v.passed(), "{a} {b} {c}: {}", v.summary());
    }
    let v = run_l(&plan, &gpas(3.1, 3.2, 3.9), BUDGET).await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &["students.gpa at students has value [3, 3.5) 2 times in 3"],
    );
    let v = run_l(&plan, &gpas(2.5, 3.5, 4.0), BUDGET).await;
    assert_caught(&v, "l-diversity", &["value [3.5, 4] 2 times in 3"]);

    // A value outside the buckets is reported by row.
    let v = run_l(&plan, &gpas(2.5, 3.2, 4.5), BUDGET).await;
    assert_caught(
        &v,
        "l-diversity",
        &["students key 3: students.gpa = '4.5' lies outside the BUCKETS (0, 2, 3, 3.5, 4)"],
    );

    // NULL is a value of its own, also in a bucketed column.
    let mut s = gpas(2.5, 3.2, 3.9);
    s[0].gpa = None;
    s[2].gpa = None;
    let v = run_l(&plan, &s, BUDGET).await;
    assert_caught(&v, "l-diversity", &["has value NULL 2 times in 3"]);
}

#[tokio::test]
async fn distinct_is_weaker_than_probabilistic() {
    // GPAs {3.5, 3.5, 3.1, 3.9}: three distinct values, but 3.5 is 2 of 4 > 1/3.
    let four = || {
        vec![
            student(1, 3.5, &[90]),
            student(2, 3.5, &[80]),
            student(3, 3.1, &[70]),
            student(4, 3.9, &[60]),
        ]
    };
    let distinct = plan_l(3, Diversity::Distinct, None);
    let v = run_l(&distinct, &four(), BUDGET).await;
    assert!(v.passed(), "{}", v.summary());

    let probabilistic = plan_l(3, Diversity::Probabilistic, None);
    let v = run_l(&probabilistic, &four(), BUDGET).await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &[
            "equivalence class of 4 entities (students key 1, students key 2, students key 3 and 1 more)",
            "students.gpa at students has value '3.5' 2 times in 4",
        ],
    );
}

/// Two students whose first courses both carry books priced {5, 5}: pairing course 10 with
/// course 20 (the first candidate) leaves those books non-diverse whatever their matching, so
/// the search has to back out of it and pair 10 with 21.
fn backtracking() -> Vec<Student> {
    let course = |g: i64, prices: &'static [f64]| (g, prices);
    vec![
        Student {
            sid: 1,
            yob: 1990,
            gpa: Some(3.1),
            courses: vec![course(90, &[5.0, 5.0]), course(80, &[6.0, 7.0])],
        },
        Student {
            sid: 2,
            yob: 1991,
            gpa: Some(3.5),
            courses: vec![course(70, &[5.0, 5.0]), course(60, &[8.0, 9.0])],
        },
    ]
}

#[tokio::test]
async fn search_backtracks_through_a_deeper_level() {
    let v = run_l(&plan_priced(2), &backtracking(), BUDGET).await;
    assert!(v.passed(), "{}", v.summary());

    // Both of student 2's courses with {5, 5}: no pairing of courses works.
    let mut s = backtracking();
    s[1].courses[1].1 = &[5.0, 5.0];
    let v = run_l(&plan_priced(2), &s, BUDGET).await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &[
            "is not 2-diverse",
            "no matching of the 2 interchangeable students > courses(course = 'Science') vertices",
        ],
    );
}

#[tokio::test]
async fn exhausted_search_budget_fails_closed() {
    // A search without backtracking always has its one step per vertex...
    let v = run_l(&plan_l(3, Diversity::Probabilistic, None), &order_trap(), 0).await;
    assert!(v.passed(), "{}", v.summary());

    // ...but one that must back out of a pairing needs budget on top.
    let v = run_l(&plan_priced(2), &backtracking(), 0).await;
    assert_eq!(failing(&v), vec!["l-diversity"], "{}", v.summary());
    assert_caught(
        &v,
        "l-diversity",
        &[
            "equivalence class of 2 entities (students key 1, students key 2)",
            "is not proven 2-diverse",
            "could not find a diverse matching within the search budget (0 backtracking steps)",
        ],
    );
}
