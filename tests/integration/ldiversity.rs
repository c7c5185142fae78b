//! l-diversity end to end on Table II (001): every algorithm of the thesis releases a Table II
//! that the standalone verifier accepts, and a k-anonymous release that is not l-diverse is
//! caught by `verify` under l-diversity declarations.

use std::path::Path;

use crate::common::*;

const K_POLICY: &str =
    "ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);";

fn with_policy(options: &str) -> String {
    table2_text().replace(K_POLICY, &format!("ANONYMIZE student WITH ({options});"))
}

/// Gives every course the same grade: any EC with courses is then 2-anonymous but not 2-diverse.
fn homogeneous_grades(table2: &Path) {
    let file = table2.join("courses.csv");
    let text = std::fs::read_to_string(&file).expect("read courses");
    let mut lines = text.lines();
    let mut out = vec![lines.next().expect("header").to_string()];
    for line in lines {
        let mut cells: Vec<&str> = line.split(',').collect();
        if let Some(last) = cells.last_mut() {
            *last = "90";
        }
        out.push(cells.join(","));
    }
    std::fs::write(&file, out.join("\n") + "\n").expect("write courses");
}

fn verify(dir: &Path, decl: &Path) -> std::process::Output {
    relanon(
        dir,
        &[
            "verify",
            decl.to_str().expect("utf-8"),
            "--release",
            "release.sqlite",
            "--key-map",
            "keys.json",
        ],
    )
}

#[test]
fn every_thesis_algorithm_releases_a_verified_2_diverse_table2() {
    for options in [
        "algorithm = 'clustree', mapping = 'lsap'",
        "algorithm = 'clustree', mapping = 'grd'",
        "algorithm = 'ctoff', mapping = 'lsap'",
        "algorithm = 'ctoff', mapping = 'grd'",
        "algorithm = 'dmiracle', threshold = 1",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = with_policy(&format!("model = 'l-diversity', l = 2, {options}"));
        let o = anonymize_table2_with_key_map(dir.path(), &text);
        let out = stdout(&o);
        assert!(
            out.contains("verify: passed (9 checks)"),
            "{options}: {out}"
        );
        assert!(out.contains("query accuracy"), "{options}: {out}");
        let v = verify(dir.path(), &dir.path().join("decl.sql"));
        assert!(v.status.success(), "{options}: {}", stdout(&v));
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("release.report.json")).expect("report"),
        )
        .expect("json");
        let u = &report["utility"];
        assert!(u["suppression_accuracy"].as_f64().is_some(), "{u}");
        assert!(
            u["kl_by_column"]["courses.grade"].is_number()
                || u["kl_by_column"]["courses.grade"].is_null(),
            "{u}"
        );
        assert!(u["queries"].as_u64().unwrap_or(0) > 0, "{u}");
    }
}

#[test]
fn a_k_anonymous_release_is_not_taken_for_an_l_diverse_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    // MiRaCle at k = 2 over homogeneous grades keeps courses with the same grade together.
    let decl = table2_workspace(dir.path(), &table2_text());
    homogeneous_grades(&dir.path().join("table2"));
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl.to_str().expect("utf-8"),
            "--key-map",
            "keys.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let l_decl = dir.path().join("l.sql");
    std::fs::write(&l_decl, with_policy("model = 'l-diversity', l = 2")).expect("write");
    let v = verify(dir.path(), &l_decl);
    let report = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{report}");
    assert!(
        report.contains("l-diversity") && report.contains("courses.grade"),
        "{report}"
    );

    // ClusTree on the same data suppresses the courses instead, and passes.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let decl2 = table2_workspace(
        dir2.path(),
        &with_policy("model = 'l-diversity', l = 2, algorithm = 'clustree'"),
    );
    homogeneous_grades(&dir2.path().join("table2"));
    let o = relanon(
        dir2.path(),
        &[
            "anonymize",
            decl2.to_str().expect("utf-8"),
            "--key-map",
            "keys.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let db = rusqlite::Connection::open(dir2.path().join("release.sqlite")).expect("open");
    let courses: Vec<i64> = column(&db, "SELECT COUNT(*) FROM courses");
    assert_eq!(courses, vec![0], "no two courses can be 2-diverse");
}
