//! 001 Sec. III on Table II: the universal-relation and per-table baselines release trees an
//! adversary tells apart, and `verify` says which student each singles out; the bitmap
//! baselines are multi-relationally k-anonymous (only costly).

use crate::common::*;

/// Table II declarations with `algorithm` in place of MiRaCle.
fn with_algorithm(algorithm: &str) -> String {
    table2_text().replace(
        "algorithm = 'miracle'",
        &format!("algorithm = '{algorithm}'"),
    )
}

/// Runs `anonymize` (with a key map) on a Table II workspace in `dir`; returns the output.
fn anonymize(dir: &std::path::Path, algorithm: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--key-map", "keys.json"];
    args.extend_from_slice(extra);
    anonymize_table2(dir, &with_algorithm(algorithm), &args)
}

/// The violation line naming one source student.
fn line_for<'a>(out: &'a str, student: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(&format!("(source key {student})")))
        .unwrap_or_else(|| panic!("no violation names {student}:\n{out}"))
}

#[test]
fn universal_and_per_table_releases_are_refused_then_caught_by_verify() {
    for algorithm in ["universal", "per-table"] {
        let dir = tempfile::tempdir().expect("tempdir");
        // Refused by default: the self-check fails and nothing is written.
        let o = anonymize(dir.path(), algorithm, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{algorithm}: {err}");
        assert!(
            err.contains("failed verification") && err.contains("--allow-unverified"),
            "{algorithm}: {err}"
        );
        assert!(!dir.path().join("release.sqlite").exists());

        // Written on request, with exit 1 and the failure said.
        let o = anonymize(dir.path(), algorithm, &["--allow-unverified"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{algorithm}: {err}");
        assert!(err.contains("FAILED verification"), "{algorithm}: {err}");
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("release.report.json")).expect("report"),
        )
        .expect("report is JSON");
        assert_eq!(report["verified"], serde_json::Value::Bool(false));

        // A standalone verify fails and names every student it singles out. S4 is the one
        // student with two courses (001 Table II), so no generalization of course values
        // hides them: the shape alone singles S4 out.
        let o = relanon(
            dir.path(),
            &["verify", "decl.sql", "--key-map", "keys.json"],
        );
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{algorithm}: {out}");
        assert!(out.contains("FAIL k-anonymity"), "{algorithm}: {out}");
        for s in ["S1", "S2", "S3", "S4"] {
            assert!(
                line_for(&out, s).contains("equivalence class of 1 entity, fewer than k = 2"),
                "{algorithm}: {out}"
            );
        }
        let s4 = line_for(&out, "S4");
        let courses = s4.matches("courses(").count();
        assert!(
            (1..=2).contains(&courses),
            "{algorithm}: S4 took two courses: {s4}"
        );
    }
}

#[test]
fn universal_generalizes_every_row_to_one_label_and_suppresses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = anonymize(dir.path(), "universal", &["--allow-unverified"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("release");
    // 11 courses and 12 books on 12 tuples of the universal relation: 6 clusters of 2 keep
    // every tuple, so every row is published (AT_1 of Table V generalizes, never drops).
    let courses: Vec<i64> = column(&db, "SELECT COUNT(*) FROM \"courses\"");
    let books: Vec<i64> = column(&db, "SELECT COUNT(*) FROM \"books\"");
    assert_eq!((courses[0], books[0]), (11, 12));
    // Labels are the fixture's hierarchy nodes.
    let labels: Vec<String> = column(&db, "SELECT DISTINCT \"course\" FROM \"courses\"");
    for l in &labels {
        assert!(
            ["Math", "CS", "Physics", "History", "Religion", "Science", "Social", "*"]
                .contains(&l.as_str()),
            "{l}"
        );
    }
}

#[test]
fn bitmap_releases_pass_verify_by_suppression_alone() {
    for algorithm in ["bitmap-complete", "bitmap-incomplete"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = anonymize(dir.path(), algorithm, &[]);
        assert!(o.status.success(), "{algorithm}: {}", stderr(&o));
        let o = relanon(
            dir.path(),
            &["verify", "decl.sql", "--key-map", "keys.json"],
        );
        assert!(o.status.success(), "{algorithm}: {}", stdout(&o));
        // Child values are published as they are (no hierarchy in a bit column): only
        // leaves of the course hierarchy appear.
        let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("release");
        let labels: Vec<String> = column(&db, "SELECT DISTINCT \"course\" FROM \"courses\"");
        assert!(!labels.is_empty(), "{algorithm}: some course survives");
        for l in &labels {
            assert!(
                ["Math", "CS", "Physics", "History", "Religion"].contains(&l.as_str()),
                "{algorithm}: {l}"
            );
        }
    }
}

#[test]
fn baselines_refuse_l_diversity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace(
        "ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);",
        "ANONYMIZE student WITH (model = 'l-diversity', l = 2, algorithm = 'universal');",
    );
    let decl = table2_workspace(dir.path(), &text);
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("universal is a k-anonymity baseline") && err.contains("clustree"),
        "{err}"
    );
}

#[test]
fn attack_singles_out_s1_on_the_baselines_but_not_on_miracle() {
    // S1 bought Discrete for Math and Calc and Dyn for Physics (001 Table II). On the
    // universal and per-table releases only one student has three book rows those fit,
    // and the adversary reads S1's GPA; MiRaCle suppressed Calc and hides Dyn and Discrete
    // among two students.
    for algorithm in ["universal", "per-table"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = anonymize(dir.path(), algorithm, &["--allow-unverified"]);
        assert_eq!(o.status.code(), Some(1), "{algorithm}: {}", stderr(&o));
        let o = attack_facts(
            dir.path(),
            &[
                "books.book = 'Calc'",
                "books.book = 'Dyn'",
                "books.book = 'Discrete'",
            ],
            &[],
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{algorithm}: {}", stderr(&o));
        assert!(
            out.contains("candidates: 1 of 4") && out.contains("SINGLED OUT"),
            "{algorithm}: {out}"
        );
        assert!(
            out.contains("3.72  100.0%  (disclosed)"),
            "{algorithm}: {out}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let o = anonymize(dir.path(), "miracle", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&attack_facts(
        dir.path(),
        &["books.book = 'Dyn'", "books.book = 'Discrete'"],
        &[],
    ));
    assert!(
        out.contains("candidates: 2 of 4") && !out.contains("SINGLED OUT"),
        "{out}"
    );
}
