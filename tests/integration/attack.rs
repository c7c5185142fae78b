//! `relanon attack` on 001 Table II. The 2-anonymous MiRaCle release is Table III: S1 and S2
//! share the courses {Physics, Science, Social}, S3 and S4 share {History, Religion}; S3's
//! Physics course and S1's Calc book are suppressed. Books: S1 {Discrete, Dyn, Social books},
//! S2 {Discrete, Dyn, Social books}, S3 and S4 {History books, Religion books}. Every number
//! below is read off fixtures/table2 and that release. One test runs on a busier rental
//! warehouse (fixtures/realworld), where a fact's columns have more combinations of leaves
//! than are evaluated in one condition.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// Runs `attack --json` with `facts` on the workspace's release and returns the findings.
fn attack(dir: &Path, facts: &[&str]) -> Value {
    let o = attack_facts(dir, facts, &["--json"]);
    assert!(o.status.success(), "attack failed: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("--json prints the findings")
}

/// The source sids of the candidates, through the key map `anonymize --key-map` wrote.
fn candidate_sids(dir: &Path, findings: &Value) -> Vec<String> {
    let map: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("keys.json")).expect("key map written"),
    )
    .expect("key map is JSON");
    let source_of: BTreeMap<String, String> = map["tables"]["students"]["pairs"]
        .as_array()
        .expect("students pairs")
        .iter()
        .map(|p| {
            (
                p["released"][0].to_string(),
                p["source"][0].as_str().expect("text sid").to_string(),
            )
        })
        .collect();
    let mut sids: Vec<String> = findings["candidate_keys"]
        .as_array()
        .expect("candidates listed")
        .iter()
        .map(|k| source_of[k.as_str().expect("key text")].clone())
        .collect();
    sids.sort();
    sids
}

/// The posterior of `column` (for the row of `fact`, 1-based, if given) as value -> percent.
fn posterior(findings: &Value, column: &str, fact: Option<u64>) -> BTreeMap<String, f64> {
    let p = findings["posteriors"]
        .as_array()
        .expect("posteriors")
        .iter()
        .find(|p| p["column"] == column && p["fact"].as_u64() == fact)
        .unwrap_or_else(|| panic!("no posterior of {column} for fact {fact:?}: {findings}"));
    p["distribution"]
        .as_array()
        .expect("distribution")
        .iter()
        .map(|s| {
            let value = s["value"].as_str().expect("non-null value").to_string();
            let percent = (s["probability"].as_f64().expect("probability") * 1000.0).round() / 10.0;
            (value, percent)
        })
        .collect()
}

fn dist(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(v, p)| (v.to_string(), *p)).collect()
}

#[test]
fn knowing_two_courses_of_s1_leaves_s1_and_s2() {
    let dir = tempfile::tempdir().expect("tempdir");
    anonymize_table2_with_key_map(dir.path(), &table2_text());
    let facts = ["courses.course = 'Physics'", "courses.course = 'Math'"];
    let f = attack(dir.path(), &facts);
    assert_eq!(f["released_entities"], 4);
    assert_eq!(f["candidates"], 2);
    assert_eq!(f["singled_out"], false);
    assert_eq!(candidate_sids(dir.path(), &f), ["S1", "S2"]);
    // Five distinct courses in the source, one of them each fact's; released course rows
    // 'Physics' x2 and 'Science' x2 fit Physics, the two 'Science' rows fit Math.
    let fact = &f["facts"][0];
    assert_eq!(
        (
            &fact["domain"],
            &fact["satisfying"],
            &fact["consistent_rows"],
            &fact["released_rows"]
        ),
        (
            &Value::from(5),
            &Value::from(1),
            &Value::from(4),
            &Value::from(10)
        )
    );
    assert_eq!(f["facts"][1]["consistent_rows"], 2);
    assert_eq!(
        posterior(&f, "students.gpa", None),
        dist(&[("2.34", 50.0), ("3.72", 50.0)])
    );
    // Physics must be the 'Physics' row (the 'Science' row is needed for Math): S1's 91 or
    // S2's 62; Math is the 'Science' row: S1's 93 (Math) or S2's 78 (CS).
    assert_eq!(
        posterior(&f, "courses.grade", Some(1)),
        dist(&[("62", 50.0), ("91", 50.0)])
    );
    assert_eq!(
        posterior(&f, "courses.grade", Some(2)),
        dist(&[("78", 50.0), ("93", 50.0)])
    );

    let o = attack_facts(dir.path(), &facts, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("candidates: 2 of 4 released student entities fit every fact")
            && !text.contains("SINGLED OUT"),
        "{text}"
    );
}

#[test]
fn facts_on_one_table_need_distinct_rows_and_unmatched_facts_give_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    anonymize_table2_with_key_map(dir.path(), &table2_text());
    // Each fits the one 'Science' row of S1 and of S2; together they need two.
    assert_eq!(
        attack(dir.path(), &["courses.course = 'Math'"])["candidates"],
        2
    );
    assert_eq!(
        attack(dir.path(), &["courses.course = 'CS'"])["candidates"],
        2
    );
    let both = attack(
        dir.path(),
        &["courses.course = 'Math'", "courses.course = 'CS'"],
    );
    assert_eq!(both["candidates"], 0);
    assert!(both["posteriors"].as_array().expect("list").is_empty());

    // S3's History, Religion and Eu.Hist book: S3 and S4 (whose 'History books' row could be
    // Eu.Hist); S1 and S2 have one 'Social' course, not two.
    let f = attack(
        dir.path(),
        &[
            "courses.course = 'History'",
            "courses.course = 'Religion'",
            "books.book = 'Eu.Hist'",
        ],
    );
    assert_eq!(f["candidates"], 2);
    assert_eq!(candidate_sids(dir.path(), &f), ["S3", "S4"]);
    assert_eq!(
        posterior(&f, "students.gpa", None),
        dist(&[("3.12", 50.0), ("4", 50.0)])
    );
    // True of S3, but S3's Physics course was suppressed: nobody left fits all three.
    let f = attack(
        dir.path(),
        &[
            "courses.course = 'History'",
            "courses.course = 'Religion'",
            "courses.course = 'Physics'",
        ],
    );
    assert_eq!(f["candidates"], 0);
    // S1's Calc book was suppressed, and no released label is an ancestor of it.
    let f = attack(dir.path(), &["books.book = 'Calc'"]);
    assert_eq!(
        (&f["candidates"], &f["facts"][0]["consistent_rows"]),
        (&Value::from(0), &Value::from(0))
    );
    // A course nobody takes: no leaf satisfies it.
    let f = attack(dir.path(), &["courses.course = 'Chemistry'"]);
    assert_eq!(
        (&f["candidates"], &f["facts"][0]["satisfying"]),
        (&Value::from(0), &Value::from(0))
    );
    let o = relanon(
        dir.path(),
        &[
            "attack",
            "decl.sql",
            "--fact",
            "courses.course = 'Chemistry'",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no released student fits"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn entity_facts_compare_numbers_against_released_bands() {
    // Table II with a year of birth per student, banded; the groups stay {S1,S2}: [1990,1994]
    // and {S3,S4}: [1985,1989].
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace(
        "CREATE ENTITY",
        "CREATE HIERARCHY yob_h AS BANDS (5, 10);\nLABEL COLUMN students.yob AS QUASI IDENTIFIER USING yob_h;\nCREATE ENTITY",
    );
    table2_workspace(dir.path(), &text);
    std::fs::write(
        dir.path().join("table2/students.csv"),
        "sid,yob,gpa\nS1,1990,3.72\nS2,1992,2.34\nS3,1985,3.12\nS4,1987,4.00\n",
    )
    .expect("write students");
    let o = relanon(
        dir.path(),
        &["anonymize", "decl.sql", "--key-map", "keys.json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // True of S2 (1992); [1990,1994] holds 1992.
    let f = attack(dir.path(), &["students.yob > 1990"]);
    assert_eq!(candidate_sids(dir.path(), &f), ["S1", "S2"]);
    // True of S3 (1985); [1985,1989] holds 1985.
    let f = attack(dir.path(), &["students.yob BETWEEN 1985 AND 1986"]);
    assert_eq!(candidate_sids(dir.path(), &f), ["S3", "S4"]);
    // Compared as text '1990' < '200' would hold for everyone; as numbers it holds for no one.
    assert_eq!(attack(dir.path(), &["students.yob < 200"])["candidates"], 0);
    // Nobody was born in 1991, though [1990,1994] covers it: the adversary knows the domain.
    assert_eq!(
        attack(dir.path(), &["students.yob = 1991"])["candidates"],
        0
    );
    // With a course the adversary also knows: S1 and S2 still, every course grade of theirs.
    let f = attack(dir.path(), &["students.yob >= 1990", "books.book = 'Dyn'"]);
    assert_eq!(candidate_sids(dir.path(), &f), ["S1", "S2"]);
    let grades = posterior(&f, "courses.grade", None);
    assert_eq!(
        grades,
        dist(&[
            ("42", 16.7),
            ("62", 16.7),
            ("78", 16.7),
            ("85", 16.7),
            ("91", 16.7),
            ("93", 16.7)
        ])
    );
}

#[test]
fn a_release_that_is_not_k_anonymous_singles_a_student_out() {
    // k = 1 publishes every tree as it is: Math and a Calc-or-Optics book is S1 alone.
    let dir = tempfile::tempdir().expect("tempdir");
    anonymize_table2_with_key_map(dir.path(), &table2_text().replace("k = 2", "k = 1"));
    let facts = [
        "courses.course = 'Math'",
        "books.book IN ('Calc', 'Optics')",
    ];
    let f = attack(dir.path(), &facts);
    assert_eq!(
        (&f["candidates"], &f["singled_out"]),
        (&Value::from(1), &Value::from(true))
    );
    assert_eq!(candidate_sids(dir.path(), &f), ["S1"]);
    assert_eq!(
        posterior(&f, "students.gpa", None),
        dist(&[("3.72", 100.0)])
    );
    assert_eq!(
        posterior(&f, "courses.grade", Some(1)),
        dist(&[("93", 100.0)])
    );
    let o = attack_facts(dir.path(), &facts, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("candidates: 1 of 4 released student entities fits every fact")
            && text.contains("SINGLED OUT")
            && text.contains("3.72  100.0%  (disclosed)"),
        "{text}"
    );
}

#[test]
fn facts_on_keys_or_unparsable_are_refused_and_outside_the_model_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    anonymize_table2_with_key_map(dir.path(), &table2_text());
    let refused = |facts: &[&str]| {
        let mut args = vec!["attack", "decl.sql"];
        for f in facts {
            args.extend(["--fact", f]);
        }
        let o = relanon(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{facts:?}: {}", stdout(&o));
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        err
    };
    // A column published unchanged is outside the model: evaluated, and said to be.
    for (fact, column) in [
        ("students.gpa > 3.5", "students.gpa"),
        ("courses.grade = 93", "courses.grade"),
        ("books.price < 30", "books.price"),
    ] {
        let o = relanon(
            dir.path(),
            &[
                "attack",
                "decl.sql",
                "--fact",
                "courses.course = 'Math'",
                "--fact",
                fact,
            ],
        );
        assert!(o.status.success(), "{fact}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains(&format!(
                "note: the facts name {column}, published unchanged"
            )) && out.contains("outside the declared model"),
            "{out}"
        );
    }
    let fact = "courses.sid = 'S1'";
    let err = refused(&["courses.course = 'Math'", fact]);
    assert!(
        err.contains(&format!("fact 2 `{fact}`"))
            && err.contains("which is a join key")
            && err.contains("not published as the source holds it")
            && err.contains("(courses.course, books.book)"),
        "{err}"
    );
    let err = refused(&["courses.teacher = 'X'"]);
    assert!(
        err.contains("no such column") && err.contains("courses.course, books.book"),
        "{err}"
    );
    let err = refused(&["teachers.name = 'X'"]);
    assert!(
        err.contains("not a table of the student family (students, courses, books)"),
        "{err}"
    );
    let err = refused(&["courses.course = 'Math' AND books.book = 'Calc'"]);
    assert!(err.contains("several tables"), "{err}");
    let err = refused(&["courses.course = 'Math'", "courses.course ="]);
    assert!(
        err.contains("fact 2 `courses.course =` cannot be parsed")
            && err.contains("write a SQL boolean expression"),
        "{err}"
    );
}

/// "Rented copy 520 on 5 July 2005", one fact about one rental row, on a rental warehouse
/// whose rentals name 1,020 copies and 1,360 timestamps: 1,387,200 combinations, over the
/// cap. The fact's two conditions share no column, so each is evaluated over its own column;
/// the candidates are counted again here in SQL, from the released labels.
#[test]
fn a_child_row_fact_on_two_columns_beyond_the_cap_is_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &["rental_busy"]);
    let decl = decl.to_str().expect("UTF-8 path");
    let o = relanon(dir.path(), &["anonymize", decl, "--quiet"]);
    assert!(o.status.success(), "anonymize: {}", stderr(&o));

    let source = rusqlite::Connection::open(dir.path().join("rental.sqlite")).expect("source");
    let (copies, times): (i64, i64) = source
        .query_row(
            "SELECT COUNT(DISTINCT inventory_id), COUNT(DISTINCT rental_date) FROM rental",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("domain sizes");
    assert!(copies * times > relanon::attack::DOMAIN_CAP as i64);
    // The victim's rental 10500: copy 520 on 2005-07-05; its film's title and rating are
    // the copy's ancestors in inventory_h.
    let (title, rating): (String, String) = source
        .query_row(
            "SELECT f.title, f.rating FROM inventory i JOIN film f ON f.film_id = i.film_id \
             WHERE i.inventory_id = 520",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("copy 520's film");
    let days: i64 = source
        .query_row(
            "SELECT COUNT(DISTINCT rental_date) FROM rental WHERE rental_date LIKE '2005-07-05%'",
            [],
            |r| r.get(0),
        )
        .expect("rentals that day");

    let fact = "rental.inventory_id = 520 AND rental.rental_date LIKE '2005-07-05%'";
    let o = relanon(dir.path(), &["attack", decl, "--json", "--fact", fact]);
    assert!(o.status.success(), "attack: {}", stderr(&o));
    let f: Value = serde_json::from_str(&stdout(&o)).expect("--json prints the findings");
    assert_eq!(
        f["facts"][0]["components"],
        serde_json::json!([
            {"columns": ["rental.inventory_id"], "domain": copies, "satisfying": 1},
            {"columns": ["rental.rental_date"], "domain": times, "satisfying": days},
        ])
    );
    assert_eq!(f["facts"][0]["domain"], copies + times);

    // A released rental row fits iff its copy label is 520 or above it, and its date label
    // is a timestamp of that day or above one: the month, the year or the root (DATE PARTS
    // (month, year)). The candidates are the customers with such a row.
    let release =
        rusqlite::Connection::open(dir.path().join("rental-release.sqlite")).expect("release");
    let (rows, expected): (i64, i64) = release
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT customer_id) FROM rental \
             WHERE CAST(inventory_id AS TEXT) IN ('520', ?1, ?2, '*') \
             AND (rental_date LIKE '2005-07-05%' OR rental_date IN ('2005-07', '2005', '*'))",
            [&title, &rating],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("count the fitting rows");
    assert!(expected > 0, "the victim's own row fits unless suppressed");
    assert_eq!(f["facts"][0]["consistent_rows"], rows);
    assert_eq!(f["candidates"], expected);

    // An OR couples the two columns: that condition is over the cap, and refused by name.
    let coupled = "rental.inventory_id = 520 OR rental.rental_date LIKE '2005-07-05%'";
    let o = relanon(dir.path(), &["attack", decl, "--fact", coupled]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("couples rental.inventory_id, rental.rental_date in one condition")
            && err.contains("split the fact into conditions on one column each"),
        "{err}"
    );
}
