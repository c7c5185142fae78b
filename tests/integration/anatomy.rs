//! `model = 'anatomy'` through the binary (000 Ch. 3): Table 3.1 and the hospital example of
//! Fig. 3.1-3.4 released in both variants and verified standalone, a tampered SA side
//! caught, the attack's groups and rule risks, and every bad input of the issue refused in
//! one line with exit 2 and nothing written.

use std::path::{Path, PathBuf};

use crate::common::{copy_dir, fixture, relanon, stderr, stdout};

/// `dir` with the hospital source built and `decl.sql` = the fixture's declarations with
/// `edit` applied (pairs of text and replacement).
fn hospital(dir: &Path, edit: &[(&str, &str)]) -> PathBuf {
    let source = dir.join("hospital.sqlite");
    if !source.exists() {
        let db = rusqlite::Connection::open(&source).expect("create");
        let script =
            std::fs::read_to_string(fixture("anatomy/hospital.sql")).expect("read fixture");
        db.execute_batch(&script).expect("run fixture script");
    }
    let mut text =
        std::fs::read_to_string(fixture("anatomy/hospital.decl.sql")).expect("read decl");
    for (from, to) in edit {
        assert!(text.contains(from), "the fixture lacks {from}");
        text = text.replace(from, to);
    }
    let decl = dir.join("decl.sql");
    std::fs::write(&decl, text).expect("write declarations");
    decl
}

fn db(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("open release")
}

/// Rows of `sql`, each as its columns rendered as text.
fn rows(db: &rusqlite::Connection, sql: &str) -> Vec<Vec<String>> {
    let mut stmt = db.prepare(sql).expect("query prepares");
    let n = stmt.column_count();
    let out = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| {
                    let v: rusqlite::types::Value = r.get(i)?;
                    Ok(match v {
                        rusqlite::types::Value::Null => "NULL".to_string(),
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Real(f) => f.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        rusqlite::types::Value::Blob(_) => "blob".to_string(),
                    })
                })
                .collect()
        })
        .expect("query runs");
    out.map(|r| r.expect("row reads")).collect()
}

fn anonymized(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["anonymize", "decl.sql", "--key-map", "keys.json"];
    all.extend_from_slice(args);
    let o = relanon(dir, &all);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("verify: passed"), "{out}");
    out
}

fn verify(dir: &Path, release: &str) -> std::process::Output {
    relanon(
        dir,
        &[
            "verify",
            "decl.sql",
            "--release",
            release,
            "--key-map",
            "keys.json",
        ],
    )
}

/// Exit 2 with one line saying `says`, and no release written.
fn refused(dir: &Path, says: &str) {
    let o = relanon(dir, &["anonymize", "decl.sql"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err}");
    assert!(!dir.join("hospital-release.sqlite").exists());
}

#[test]
fn table_3_1_is_grouped_as_the_thesis_prints_it_in_both_variants() {
    for variant in ["t-t", "v-v"] {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(&fixture("anatomy/table31"), &dir.path().join("table31"));
        let text = std::fs::read_to_string(fixture("anatomy/table31.decl.sql"))
            .expect("read decl")
            .replace("'table31-release'", "'release.sqlite'")
            .replace("'t-t'", &format!("'{variant}'"));
        std::fs::write(dir.path().join("decl.sql"), text).expect("write decl");
        anonymized(dir.path(), &["--with", "seed = 3"]);
        let r = db(&dir.path().join("release.sqlite"));
        // Groups by age: {42, 46}, {54, 51}, {24, 22} (Table 3.1(c)).
        let groups = rows(
            &r,
            "SELECT group_concat(Age, ' ') FROM (SELECT Age, group_id FROM patients ORDER BY Age) GROUP BY group_id ORDER BY min(Age)",
        );
        assert_eq!(groups, [["22 24"], ["42 46"], ["51 54"]], "{variant}");
        // The QI side has no Disease; the SA side holds each group's two (Table 3.1(d)).
        let columns = rows(&r, "SELECT name FROM pragma_table_info('patients')");
        assert_eq!(
            columns.concat(),
            ["Age", "Sex", "Nationality", "group_id", "slot"],
            "{variant}"
        );
        let side = if variant == "t-t" {
            "SELECT group_concat(Disease, ', ') FROM (SELECT q.Age AS a, s.Disease FROM patients__sa s JOIN patients q ON q.slot = s.slot ORDER BY s.Disease) GROUP BY a ORDER BY a"
        } else {
            "SELECT group_concat(Disease, ', ') FROM (SELECT q.Age AS a, s.Disease FROM patients__sag s JOIN patients q ON q.slot = s.slot ORDER BY s.Disease) GROUP BY a ORDER BY a"
        };
        assert_eq!(
            rows(&r, side),
            [
                ["Gastritis, Pneumonia"],
                ["Gastritis, Pneumonia"],
                ["Flu, Hearth Disease"],
                ["Flu, Hearth Disease"],
                ["Bronchitis, Dyspepsia"],
                ["Bronchitis, Dyspepsia"]
            ],
            "{variant}"
        );
    }
}

/// As the fixture declares it: CSV in, a Parquet directory out, verified standalone.
#[test]
fn table_3_1_releases_to_parquet_and_verifies_standalone() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture("anatomy/table31"), &dir.path().join("table31"));
    std::fs::copy(
        fixture("anatomy/table31.decl.sql"),
        dir.path().join("decl.sql"),
    )
    .expect("copy decl");
    anonymized(dir.path(), &[]);
    let release = dir.path().join("table31-release");
    assert!(release.join("patients__sa.parquet").exists());
    let o = verify(dir.path(), "table31-release");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // The dry run says where each column goes.
    let o = relanon(dir.path(), &["plan", "decl.sql"]);
    let text = stdout(&o);
    assert!(
        text.contains("Age: published exactly")
            && text.contains("Disease: published apart from its rows, in patients__sa"),
        "{text}"
    );
}

#[test]
fn the_hospital_gives_fig_3_4_in_v_v_and_the_first_fit_trace_in_t_t() {
    // v-v under (AIDS, 1, 1/2) and (Alcohol P., 2, 1/4): B's AIDS of 2006 is refused at the
    // second slot (a second AIDS would exceed eta_max = 1), so Flu and Cold take the others.
    let dir = tempfile::tempdir().expect("tempdir");
    hospital(dir.path(), &[]);
    anonymized(dir.path(), &[]);
    let r = db(&dir.path().join("hospital-release.sqlite"));
    let dates = rows(
        &r,
        r#"SELECT "Visit Date" FROM "Hospital Visits" ORDER BY 1"#,
    )
    .concat();
    assert!(!dates.contains(&"2006-02-14".to_string()), "{dates:?}");
    assert_eq!(dates.len(), 6);
    let slots = rows(
        &r,
        r#"SELECT group_concat(diagnosis, ' | ') FROM (SELECT slot, diagnosis FROM "Hospital Visits__sag" ORDER BY diagnosis) GROUP BY slot ORDER BY 1"#,
    );
    assert_eq!(
        slots,
        [
            ["AIDS | Alcohol P."],
            ["Alcohol P. | Flu"],
            ["Cold | Diaria"]
        ]
    );
    assert!(verify(dir.path(), "hospital-release.sqlite")
        .status
        .success());
    // A count moved from Flu to AIDS: truthfulness and the rule both break.
    r.execute_batch(
        r#"UPDATE "Hospital Visits__sag" SET diagnosis = 'AIDS' WHERE diagnosis = 'Flu';"#,
    )
    .expect("tamper");
    let o = verify(dir.path(), "hospital-release.sqlite");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));

    // t-t with mu_max = 1 for both: first fit pairs both of B's AIDS with A's alcohol
    // poisonings and B loses Cold 2007, not AIDS 2006 (the spec's hand trace).
    let dir = tempfile::tempdir().expect("tempdir");
    hospital(
        dir.path(),
        &[("'v-v'", "'t-t'"), ("m = 2, p = 0.25", "m = 2, p = 0.5")],
    );
    anonymized(dir.path(), &[]);
    let r = db(&dir.path().join("hospital-release.sqlite"));
    let dates = rows(
        &r,
        r#"SELECT "Visit Date" FROM "Hospital Visits" ORDER BY 1"#,
    )
    .concat();
    assert!(!dates.contains(&"2007-12-24".to_string()), "{dates:?}");
    // Each SA-tree is whole: one root with its visits through parent_sa_id.
    let trees = rows(
        &r,
        r#"SELECT p."Blood Type", group_concat(v.diagnosis, ' | ') FROM "Patients__sa" p JOIN (SELECT * FROM "Hospital Visits__sa" ORDER BY diagnosis) v ON v.parent_sa_id = p.sa_id GROUP BY p.sa_id ORDER BY 1"#,
    );
    assert_eq!(
        trees,
        [
            ["0+", "Alcohol P. | Alcohol P. | Diaria"],
            ["AB-", "AIDS | AIDS | Flu"]
        ]
    );
    assert!(verify(dir.path(), "hospital-release.sqlite")
        .status
        .success());
}

/// A missing diagnosis is a value of its own (it collides with another missing one), a
/// second sensitive column on the entity table is diverse on its own, and with keys kept the
/// SA side's keys are still drawn fresh: both variants verify.
#[test]
fn nulls_two_sensitive_columns_and_preserved_keys_verify() {
    for variant in ["t-t", "v-v"] {
        let dir = tempfile::tempdir().expect("tempdir");
        hospital(
            dir.path(),
            &[
                ("'v-v'", &format!("'{variant}', keys = 'preserve'")),
                (
                    r#""Patients"."Full Name" AS IDENTIFIER"#,
                    r#""Patients"."Full Name" AS SENSITIVE"#,
                ),
            ],
        );
        let db = rusqlite::Connection::open(dir.path().join("hospital.sqlite")).expect("open");
        db.execute_batch(
            r#"INSERT INTO "Hospital Visits" VALUES (8, 1, '2008-04-01', NULL), (9, 2, '2008-06-30', NULL);"#,
        )
        .expect("add visits without a diagnosis");
        drop(db);
        let out = anonymized(dir.path(), &[]);
        assert!(out.contains("verify: passed"), "{out}");
        let r = rusqlite::Connection::open(dir.path().join("hospital-release.sqlite"))
            .expect("release");
        // Two NULL diagnoses cannot share a slot. In v-v the slot of A's NULL finds no row of
        // B's it can take (B's NULL collides, a second AIDS breaks its rule), so it goes; in
        // t-t B's Flu takes it.
        let nulls = rows(
            &r,
            r#"SELECT COUNT(*) FROM "Hospital Visits" v WHERE v."Visit Date" LIKE '2008%'"#,
        );
        let want = if variant == "t-t" { "1" } else { "0" };
        assert_eq!(nulls, [[want]], "{variant}");
        // Kept keys on the QI side; the SA side's never equal them as a set of pairs.
        let keys = rows(&r, r#"SELECT "Patient Id" FROM "Patients" ORDER BY 1"#);
        assert_eq!(keys, [["1"], ["2"]]);
        assert!(verify(dir.path(), "hospital-release.sqlite")
            .status
            .success());
    }
}

#[test]
fn the_attack_finds_the_qi_tree_but_only_the_group_of_its_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    hospital(dir.path(), &[]);
    anonymized(dir.path(), &[]);
    let o = relanon(
        dir.path(),
        &[
            "attack",
            "decl.sql",
            "--json",
            "--fact",
            r#""Patients".age = 47"#,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let f: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(f["candidates"], 1);
    assert_eq!(f["anatomy"]["groups"][0][1], 2, "{f}");
    // Blood type: either of the group's two, as l = 2 promises.
    let blood = &f["posteriors"][0]["distribution"];
    assert_eq!(blood[0]["probability"], 0.5, "{f}");
    // Each rule's risk stays within its p: 1/2 for AIDS at least once (eta = 1), 1/4 for
    // two alcohol poisonings (eta = 2, Fig. 3.4's 3/4 >= 3/4).
    let risk: Vec<(String, f64)> = f["anatomy"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().expect("name").to_string(),
                r["probability"].as_f64().expect("p"),
            )
        })
        .collect();
    assert_eq!(risk.len(), 2);
    assert!((risk[0].1 - 0.5).abs() < 1e-12, "{risk:?}");
    assert!((risk[1].1 - 0.25).abs() < 1e-12, "{risk:?}");
    let text = stdout(&relanon(
        dir.path(),
        &["attack", "decl.sql", "--fact", r#""Patients".age = 47"#],
    ));
    assert!(
        text.contains("rule alcohol") && text.contains("within p = 1/4"),
        "{text}"
    );
}

#[test]
fn every_bad_input_is_refused_in_one_line_with_nothing_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("l = 2", "l = 1")], "anatomy needs l >= 2"),
        (
            &[("l = 2", "l = 3")],
            "l = 3 but the source has only 2 patient entities",
        ),
        (
            &[(
                r#""Patients".insured AS INSENSITIVE"#,
                r#""Patients".insured AS SENSITIVE"#,
            )],
            "Patients.insured holds 1 distinct value(s) (after its buckets), fewer than l = 2",
        ),
        (
            &[(
                "CREATE RULE aids",
                r#"CREATE RULE blood ON "Patients"."Blood Type" WITH (m = 1, p = 0.25);
CREATE RULE aids"#,
            )],
            r#"rule(s) 'blood': the rules on Patients.Blood Type allow no group to hold any of its values"#,
        ),
        (
            &[("p = 0.5", "p = 1.5")],
            "p must be a share above 0 and at most 1",
        ),
        (
            &[("p = 0.5", "p = 0")],
            "p must be a share above 0 and at most 1",
        ),
        (
            &[("m = 1, p = 0.5", "m = 0, p = 0.5")],
            "m must be a whole number of occurrences, 1 or more",
        ),
        (
            &[
                (
                    r#""Blood Type" AS SENSITIVE"#,
                    r#""Blood Type" AS INSENSITIVE"#,
                ),
                ("diagnosis AS SENSITIVE", "diagnosis AS INSENSITIVE"),
                ("CREATE RULE aids", "-- CREATE RULE aids"),
                ("CREATE RULE alcohol", "-- CREATE RULE alcohol"),
            ],
            "the Patients family has no SENSITIVE column",
        ),
        (
            &[(
                "CREATE RULE aids ON \"Hospital Visits\".diagnosis",
                "CREATE RULE aids ON \"Hospital Visits\".\"Visit Date\"",
            )],
            "which is not SENSITIVE",
        ),
        (
            &[(
                "ANONYMIZE",
                r#"CREATE VIEW by_diagnosis AS SELECT diagnosis, COUNT(*) AS n FROM "Hospital Visits" GROUP BY diagnosis;
ANONYMIZE"#,
            )],
            "view by_diagnosis reads the SENSITIVE column",
        ),
    ];
    for (edit, says) in cases {
        hospital(d, edit);
        refused(d, says);
    }
    // A rule on a value the column never holds is most likely a typo: said, not refused.
    hospital(d, &[("= 'AIDS'", "= 'Aids'")]);
    let o = relanon(d, &["anonymize", "decl.sql"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("never holds the value 'Aids'"),
        "{}",
        stderr(&o)
    );
}

/// The same seed gives the same groups, slots and release on one thread as on two (the
/// argmin runs on two threads once a part has 64 candidates; 120 students have more).
#[test]
fn one_thread_anatomizes_as_two_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let o = relanon(
        d,
        &[
            "generate",
            "synthetic-s",
            "--students",
            "120",
            "--out",
            "s.sqlite",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let decl = crate::common::root().join("sql/synthetic_s.sql");
    let decl = decl.to_str().expect("a UTF-8 path");
    for variant in ["t-t", "v-v"] {
        let mut reports = Vec::new();
        for threads in ["1", "2"] {
            let target = format!("rel-{variant}-{threads}.sqlite");
            let with = format!(
                "model = 'anatomy', l = 2, variant = '{variant}', algorithm = 'anatomy', seed = 7"
            );
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_relanon"))
                .current_dir(d)
                .env("RAYON_NUM_THREADS", threads)
                .args(["anonymize", decl, "--source", "s.sqlite", "--target"])
                .args([target.as_str(), "--overwrite", "--json", "--with", &with])
                .output()
                .expect("the relanon binary runs");
            assert!(o.status.success(), "{threads} threads: {}", stderr(&o));
            let mut report: serde_json::Value =
                serde_json::from_str(&stdout(&o)).expect("json report");
            assert_eq!(report["verified"], true, "{report}");
            report
                .as_object_mut()
                .expect("the report is an object")
                .remove("timings_ms");
            reports.push(report);
        }
        assert_eq!(reports[0], reports[1], "{variant}");
        let one = db(&d.join(format!("rel-{variant}-1.sqlite")));
        let two = db(&d.join(format!("rel-{variant}-2.sqlite")));
        let tables = rows(
            &one,
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        )
        .concat();
        assert!(tables.len() >= 6, "{tables:?}");
        for t in tables {
            let all = format!("SELECT * FROM \"{t}\"");
            assert_eq!(rows(&one, &all), rows(&two, &all), "{variant} {t}");
        }
    }
}

/// `--with "model = 'anatomy', ..."` on a file that names a generalizing algorithm runs the
/// model's own algorithm (naming a model drops the file's algorithm that cannot serve it),
/// on a real-shaped warehouse: every customer grouped, the release verified.
#[test]
fn with_a_model_switches_a_files_algorithm_that_cannot_serve_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = crate::common::realworld_workspace(dir.path(), "rental", "rental", &[]);
    let decl = decl.to_str().expect("UTF-8 path");
    let text = std::fs::read_to_string(decl).expect("read");
    assert!(
        text.contains("algorithm = 'miraclex'"),
        "the fixture names miraclex"
    );
    for (with, algorithm) in [
        ("model = 'anatomy', l = 2, variant = 'v-v'", "anatomy"),
        ("model = 'l-diversity', l = 2", "clustree"),
    ] {
        let o = relanon(
            dir.path(),
            &[
                "anonymize",
                decl,
                "--with",
                with,
                "--target",
                "r.sqlite",
                "--overwrite",
                "--json",
            ],
        );
        assert!(o.status.success(), "{with}: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        assert_eq!(report["params"]["algorithm"], algorithm, "{report}");
        assert_eq!(report["verified"], true);
    }
    // An algorithm that serves the model stays.
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            decl,
            "--with",
            "model = 'k-anonymity', k = 3",
            "--target",
            "r.sqlite",
            "--overwrite",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(report["params"]["algorithm"], "miraclex", "{report}");
}
