//! `algorithm = 'fragment'` (seed 004): a generated wide table with a four-valued class
//! released as two fragments that verify standalone, each with its own columns, no key and
//! an order of its own; the class repairs; tampering caught (a second shared column, a join
//! re-forming fewer than k rows, the source order, the whole table beside its fragments);
//! every bad input refused in one line with nothing written.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Rows of the generated table.
const ROWS: usize = 400;

/// The class values: four, so that a join of two classes can re-form fewer than k rows (with
/// two values and classes of k rows or more it cannot: `a1·b1 + a2·b2 >= a1 + a2`).
const DIAGNOSES: [&str; 4] = ["flu", "asthma", "diabetes", "migraine"];

/// A deterministic table of `ROWS` people (id, name, sex, age, zip, education, job, visits,
/// diagnosis), the QIs loosely tied to the diagnosis, with hierarchies, and declarations
/// ending in `anonymize`, in `dir`.
fn workspace(dir: &Path, anonymize: &str) -> PathBuf {
    workspace_with(dir, "IDENTIFIER", anonymize)
}

/// [`workspace`] with the zip's code column (`Z` and the zip: a twin of the zip) labelled
/// `zcode`.
fn workspace_with(dir: &Path, zcode: &str, anonymize: &str) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    let educations = ["Bachelors", "HS-grad", "Masters", "11th"];
    let jobs = ["Sales", "Tech", "Care", "Admin", "Craft", "Farm"];
    let mut csv = String::from("id;name;sex;age;zip;zcode;education;job;visits;diagnosis\n");
    let mut x: u64 = 11;
    for i in 0..ROWS {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let pick = (x >> 33) as usize;
        let d = pick % 4;
        let sex = ["Male", "Female"][(pick / 4 + d) % 2];
        let age = 20 + (pick / 8) % 50 + 5 * d;
        let zip = 47900 + (pick / 512) % 20;
        let education = educations[(pick / 16 + d) % 4];
        let job = jobs[(pick / 64) % 6];
        let visits = (pick / 4096) % 9 + d;
        csv.push_str(&format!(
            "{};person{i};{sex};{age};{zip};Z{zip};{education};{job};{visits};{}\n",
            i + 1,
            DIAGNOSES[d]
        ));
    }
    std::fs::write(data.join("people.csv"), csv).expect("csv");
    std::fs::write(data.join("h_sex.csv"), "Male;*\nFemale;*\n").expect("sex");
    let ages: String = (0..100)
        .map(|a| {
            let ten = a / 10 * 10;
            format!("{a};{ten}-{};*\n", ten + 9)
        })
        .collect();
    std::fs::write(data.join("h_age.csv"), ages).expect("age");
    let zips: String = (47900..47920)
        .map(|z| format!("{z};{}*;*\n", z / 10))
        .collect();
    std::fs::write(data.join("h_zip.csv"), zips).expect("zip");
    std::fs::write(
        data.join("h_education.csv"),
        "Bachelors;Higher;*\nMasters;Higher;*\nHS-grad;Secondary;*\n11th;Secondary;*\n",
    )
    .expect("education");
    std::fs::write(
        data.join("h_job.csv"),
        "Sales;Office;*\nAdmin;Office;*\nTech;Skilled;*\nCraft;Skilled;*\nCare;Field;*\nFarm;Field;*\n",
    )
    .expect("job");
    let decl = dir.join("people.sql");
    std::fs::write(
        &decl,
        format!(
            "SET source = 'data/people.csv';
             SET csv_delimiter = ';';
             SET target = 'release.sqlite';
             CREATE HIERARCHY sex_h FROM CSV 'data/h_sex.csv';
             CREATE HIERARCHY age_h FROM CSV 'data/h_age.csv';
             CREATE HIERARCHY zip_h FROM CSV 'data/h_zip.csv';
             CREATE HIERARCHY edu_h FROM CSV 'data/h_education.csv';
             CREATE HIERARCHY job_h FROM CSV 'data/h_job.csv';
             CREATE ENTITY person ON people (id);
             LABEL COLUMN people.name AS IDENTIFIER;
             LABEL COLUMN people.sex AS QUASI IDENTIFIER USING sex_h;
             LABEL COLUMN people.age AS QUASI IDENTIFIER USING age_h;
             LABEL COLUMN people.zip AS QUASI IDENTIFIER USING zip_h;
             LABEL COLUMN people.zcode AS {zcode};
             LABEL COLUMN people.education AS QUASI IDENTIFIER USING edu_h;
             LABEL COLUMN people.job AS QUASI IDENTIFIER USING job_h;
             LABEL COLUMN people.visits AS INSENSITIVE;
             LABEL COLUMN people.diagnosis AS SENSITIVE;
             {anonymize}"
        ),
    )
    .expect("declarations");
    decl
}

const FRAGMENT: &str =
    "ANONYMIZE person WITH (k = 5, algorithm = 'fragment', class = 'diagnosis', seed = 7);";

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let o = relanon(dir, args);
    assert!(
        o.status.success(),
        "relanon {args:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

/// `verify` (run with `args`) passes a fragmentation's every check.
fn verifies(dir: &Path, args: &[&str]) {
    let v = run(dir, args);
    let text = stdout(&v);
    for check in [
        "PASS fragments",
        "PASS fragment order",
        "PASS non-reconstructability",
        "PASS k-anonymity",
        "PASS truthfulness",
    ] {
        assert!(text.contains(check), "{check}:\n{text}");
    }
}

/// The first column of every row `sql` returns, as text.
fn texts(db: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut s = db.prepare(sql).expect("prepare");
    s.query_map([], |r| r.get::<_, String>(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

fn columns(db: &rusqlite::Connection, table: &str) -> Vec<String> {
    texts(
        db,
        &format!("SELECT name FROM pragma_table_info('{table}')"),
    )
}

fn tables(db: &rusqlite::Connection) -> Vec<String> {
    texts(
        db,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    )
}

/// Every row of a table as text, in its stored order.
fn rows(db: &rusqlite::Connection, table: &str) -> Vec<String> {
    let select = columns(db, table)
        .iter()
        .map(|c| format!("COALESCE(CAST(\"{c}\" AS TEXT), 'NULL')"))
        .collect::<Vec<_>>()
        .join(" || '|' || ");
    texts(
        db,
        &format!("SELECT {select} FROM \"{table}\" ORDER BY rowid"),
    )
}

#[test]
fn a_wide_table_is_released_as_two_fragments_that_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    for repair in ["dgbe", "naive"] {
        for base in ["topdown", "lattice"] {
            let line = FRAGMENT.replace(
                "seed = 7",
                &format!("seed = 7, repair = '{repair}', base = '{base}'"),
            );
            workspace(dir.path(), &line);
            let r = released(dir.path());
            assert_eq!(r["verified"], true, "{r}");
            let f = &r["fragmentation"];
            assert_eq!(f["class"], "diagnosis", "{r}");
            // Query accuracy split by where the queries' predicates lie: both kinds occur.
            let q = &r["utility"]["fragment_queries"];
            let (one, both) = (&q["within_one_count"], &q["across_count"]);
            let counted = one.as_u64().expect("one") + both.as_u64().expect("both");
            assert!(
                counted > 0 && counted <= r["utility"]["queries"].as_u64().expect("n"),
                "{q}"
            );
            assert!(both.as_u64() > Some(0), "{q}");
            assert_eq!(f["repair"], repair);
            // The re-join attack ran and recovered nothing beyond chance by order or by QIs.
            let rejoin = &f["rejoin"];
            assert!(rejoin["records"].as_u64() > Some(0), "{rejoin}");
            for attack in ["by_order", "by_qi"] {
                assert_eq!(rejoin[attack]["beyond_chance"], 0, "{attack}: {rejoin}");
            }
            let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
            assert_eq!(tables(&db), ["people__f1", "people__f2"]);
            let (a, b) = (columns(&db, "people__f1"), columns(&db, "people__f2"));
            // The class is the only column in both; no key, no identifier; every QI once.
            let shared: Vec<&String> = a.iter().filter(|c| b.contains(c)).collect();
            assert_eq!(shared, ["diagnosis"], "{a:?} {b:?}");
            for gone in ["id", "name", "zcode"] {
                assert!(!a.iter().chain(&b).any(|c| c == gone), "{a:?} {b:?}");
            }
            for column in ["sex", "age", "zip", "education", "job", "visits"] {
                assert_eq!(
                    a.iter().chain(&b).filter(|c| *c == column).count(),
                    1,
                    "{column}"
                );
            }
            drop(db);
            verifies(dir.path(), &["verify", "people.sql"]);
        }
    }
}

#[test]
fn a_delta_release_publishes_class_sets_that_verify_and_a_thinned_set_is_caught() {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = FRAGMENT.replace("seed = 7", "seed = 7, repair = 'delta', delta = 0.5");
    workspace(dir.path(), &line);
    let r = released(dir.path());
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(
        r["fragmentation"]["fragments"][0]["class_sets"],
        "people__f1_classes"
    );
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
    assert_eq!(
        tables(&db),
        [
            "people__f1",
            "people__f1_classes",
            "people__f2",
            "people__f2_classes"
        ]
    );
    // No class per row in a fragment: the sets stand in for it.
    assert!(!columns(&db, "people__f1").contains(&"diagnosis".to_string()));
    let sets = columns(&db, "people__f1_classes");
    assert_eq!(sets.last().map(String::as_str), Some("diagnosis"));
    drop(db);
    let v = run(dir.path(), &["verify", "people.sql"]);
    assert!(
        stdout(&v).contains("PASS delta-selectivity"),
        "{}",
        stdout(&v)
    );
    // The second fragment's sets thinned to 'flu': its classes without it publish none.
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
    db.execute_batch("DELETE FROM people__f2_classes WHERE diagnosis <> 'flu';")
        .expect("tamper");
    drop(db);
    let v = relanon(dir.path(), &["verify", "people.sql"]);
    let text = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL delta-selectivity"), "{text}");
    assert!(text.contains("publishes no class"), "{text}");
}

#[test]
fn the_same_seed_releases_the_same_fragments() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    let mut seen = Vec::new();
    for _ in 0..2 {
        run(
            dir.path(),
            &["anonymize", "people.sql", "--overwrite", "--quiet"],
        );
        let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
        seen.push((rows(&db, "people__f1"), rows(&db, "people__f2")));
    }
    assert_eq!(seen[0], seen[1]);
}

/// Runs `sql` on the release, then verify, which must fail `check` with a violation
/// containing `says`.
fn tampered_fails(dir: &Path, sql: &str, check: &str, says: &str) {
    workspace(dir, FRAGMENT);
    run(dir, &["anonymize", "people.sql", "--overwrite", "--quiet"]);
    let db = rusqlite::Connection::open(dir.join("release.sqlite")).expect("open");
    db.execute_batch(sql).expect("tamper");
    drop(db);
    let v = relanon(dir, &["verify", "people.sql"]);
    let text = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{text}{}", stderr(&v));
    assert!(text.contains(&format!("FAIL {check}")), "{check}:\n{text}");
    assert!(text.contains(says), "{says}:\n{text}");
}

#[test]
fn verify_catches_fragments_that_can_be_re_joined() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every class in one fragment 'flu' but one 'asthma', in the other 'diabetes' but one
    // 'asthma': the two classes holding the 'asthma' rows join into one row.
    tampered_fails(
        dir.path(),
        "UPDATE people__f1 SET diagnosis = 'flu';
         UPDATE people__f1 SET diagnosis = 'asthma' WHERE rowid = (SELECT MIN(rowid) FROM people__f1);
         UPDATE people__f2 SET diagnosis = 'diabetes';
         UPDATE people__f2 SET diagnosis = 'asthma' WHERE rowid = (SELECT MIN(rowid) FROM people__f2);",
        "non-reconstructability",
        "into 1 row(s), fewer than k = 5",
    );
    // A QI column copied into the other fragment: a second join key.
    let both = {
        workspace(dir.path(), FRAGMENT);
        run(
            dir.path(),
            &["anonymize", "people.sql", "--overwrite", "--quiet"],
        );
        let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
        let a = columns(&db, "people__f1");
        a.into_iter()
            .find(|c| c != "diagnosis")
            .expect("a column besides the class")
    };
    tampered_fails(
        dir.path(),
        &format!(
            "ALTER TABLE people__f2 ADD COLUMN \"{both}\" TEXT; UPDATE people__f2 SET \"{both}\" = '*';"
        ),
        "fragments",
        &format!("{both} is released in people__f1 and in people__f2"),
    );
    // Rows in reverse order: an order that is not the fragment's own.
    tampered_fails(
        dir.path(),
        "CREATE TABLE t AS SELECT * FROM people__f1 ORDER BY rowid DESC;
         DELETE FROM people__f1; INSERT INTO people__f1 SELECT * FROM t; DROP TABLE t;",
        "fragment order",
        "sorts before it",
    );
    // The table whole beside its fragments.
    tampered_fails(
        dir.path(),
        "CREATE TABLE people AS SELECT * FROM people__f1;",
        "fragments",
        "released whole beside its fragments",
    );
}

#[test]
fn a_column_that_reveals_a_qi_is_caught_in_whichever_fragment_it_lands() {
    // The zip's code, published unchanged: in the zip's fragment it undoes the zip's
    // generalization; in the other it brings the zip into a fragment that does not count it.
    let dir = tempfile::tempdir().expect("tempdir");
    workspace_with(dir.path(), "INSENSITIVE", FRAGMENT);
    let o = relanon(dir.path(), &["anonymize", "people.sql"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}{}", stdout(&o));
    assert!(err.contains("FAIL twins"), "{err}");
    assert!(err.contains("zcode"), "{err}");
    assert!(!dir.path().join("release.sqlite").exists());
}

/// `anonymize` with `line` (and `extra` arguments) must exit 2 with one line containing
/// `says`, writing nothing.
fn refused(line: &str, extra: &[&str], says: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), line);
    let mut args = vec!["anonymize", "people.sql"];
    args.extend_from_slice(extra);
    let o = relanon(dir.path(), &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{line}: {err}{}", stdout(&o));
    assert!(err.contains(says), "{line}: expected '{says}' in {err}");
    assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
    assert!(!dir.path().join("release.sqlite").exists(), "{line}");
}

#[test]
fn a_class_with_a_missing_value_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    let csv = dir.path().join("data/people.csv");
    let text = std::fs::read_to_string(&csv).expect("read");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cut = lines[1].rfind(';').expect("a last column");
    lines[1].truncate(cut + 1);
    std::fs::write(&csv, lines.join("\n") + "\n").expect("write");
    refused_in(dir.path(), "is NULL in 1 row(s)");
}

/// The report of `anonymize --json` in `dir`, which must succeed.
fn released(dir: &Path) -> serde_json::Value {
    let o = run(dir, &["anonymize", "people.sql", "--overwrite", "--json"]);
    serde_json::from_str(&stdout(&o)).expect("json")
}

/// `anonymize` in `dir` fails with exit 2, says `says`, and writes nothing.
fn refused_in(dir: &Path, says: &str) {
    let o = relanon(dir, &["anonymize", "people.sql"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(says), "{err}");
    assert!(!dir.join("release.sqlite").exists());
}

#[test]
fn what_this_version_cannot_fragment_is_refused() {
    // A family whose entity table has no QI column to split.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace(
        "ANONYMIZE student WITH (k = 2, algorithm = 'miracle', threshold = 1, climit = 150);",
        "ANONYMIZE student WITH (k = 2, algorithm = 'fragment', class = 'gpa');",
    );
    let decl = table2_workspace(dir.path(), &text);
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("students has 0: nothing to fragment; use algorithm = 'miraclex'"),
        "{err}"
    );
    // One QI column: nothing to fragment.
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = workspace(dir.path(), FRAGMENT);
    let one = std::fs::read_to_string(&decl)
        .expect("read")
        .lines()
        .map(|l| match l.split_once(" AS QUASI IDENTIFIER") {
            Some((column, _)) if !l.contains("people.sex") => format!("{column} AS INSENSITIVE;"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&decl, one).expect("write");
    let o = relanon(dir.path(), &["anonymize", "people.sql"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to fragment"), "{err}");
    // delta past the k its check counts exactly.
    refused(
        "ANONYMIZE person WITH (k = 65, algorithm = 'fragment', class = 'diagnosis', repair = 'delta');",
        &[],
        "for k up to 64",
    );
}

#[test]
fn bad_fragmentations_are_refused_in_one_line() {
    let base = "ANONYMIZE person WITH (k = 5, algorithm = 'fragment'";
    refused(
        &format!("{base});"),
        &[],
        "class = '<a SENSITIVE column of people>'",
    );
    refused(
        &format!("{base}, class = 'age');"),
        &[],
        "is labelled QUASI IDENTIFIER",
    );
    refused(
        &format!("{base}, class = 'name');"),
        &[],
        "is labelled IDENTIFIER",
    );
    refused(
        &format!("{base}, class = 'visits');"),
        &[],
        "is labelled INSENSITIVE",
    );
    refused(
        &format!("{base}, class = 'nope');"),
        &[],
        "is not a column of the entity table",
    );
    refused(
        &format!("{base}, class = 'diagnosis', fragments = 3);"),
        &[],
        "this version splits a single table into 2 fragments",
    );
    // More fragments than QI columns (five here).
    refused(
        &format!("{base}, class = 'diagnosis', fragments = 7);"),
        &[],
        "each fragment needs one",
    );
    refused(
        &format!("{base}, class = 'diagnosis', repair = 'delta', delta = 0);"),
        &[],
        "delta must be above 0",
    );
    refused(
        &format!("{base}, class = 'diagnosis', repair = 'delta', delta = 1.5);"),
        &[],
        "delta must be a number between 0 and 1",
    );
    refused(
        &format!("{base}, class = 'diagnosis', base = 'miraclex');"),
        &[],
        "base must be 'auto' or 'topdown' or 'lattice' or 'clustree'",
    );
    refused(
        &format!("{base}, class = 'diagnosis', keys = 'preserve');"),
        &[],
        "keys = 'preserve' would publish one key in every fragment",
    );
    refused(
        &format!("{base}, class = 'diagnosis');"),
        &["--key-map", "map.json"],
        "--key-map",
    );
    refused(
        &format!("{base}, class = 'diagnosis');"),
        &["--shards", "2"],
        "not split into shards",
    );
    refused(
        &format!("{base}, class = 'diagnosis', segment_rows = 50);"),
        &[],
        "segment_rows is for l-diversity",
    );
    let ldiv = "ANONYMIZE person WITH (model = 'l-diversity', l = 2, algorithm = 'fragment', class = 'diagnosis'";
    refused(&format!("{ldiv});"), &[], "add diversity = 'distinct'");
    let ldiv = format!("{ldiv}, diversity = 'distinct'");
    refused(
        &format!("{ldiv}, repair = 'naive');"),
        &[],
        "repair is for k-anonymity",
    );
    refused(
        &format!("{ldiv}, base = 'topdown');"),
        &[],
        "base = 'topdown' is a k-anonymity algorithm",
    );
    refused(
        &format!("{});", ldiv.replace("l = 2", "l = 5")),
        &[],
        "has 4 distinct value(s) and every l-diverse group needs at least 5",
    );
}

#[test]
fn a_sensitive_column_beside_the_class_is_refused_under_l_diversity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = workspace(
        dir.path(),
        "ANONYMIZE person WITH (model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'fragment', class = 'diagnosis');",
    );
    let text = std::fs::read_to_string(&decl)
        .expect("read")
        .replace("people.visits AS INSENSITIVE", "people.visits AS SENSITIVE");
    std::fs::write(&decl, text).expect("write");
    refused_in(dir.path(), "also has SENSITIVE visits");
}

#[test]
fn an_l_diverse_fragmentation_keeps_every_class_and_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    for base in ["auto", "lattice"] {
        workspace(
            dir.path(),
            &format!("ANONYMIZE person WITH (model = 'l-diversity', l = 3, diversity = 'distinct', algorithm = 'fragment', class = 'diagnosis', base = '{base}', segment_rows = 20, seed = 7);"),
        );
        let r = released(dir.path());
        assert_eq!(r["verified"], true, "{r}");
        let f = &r["fragmentation"];
        assert_eq!(f["repair"], "none", "{f}");
        assert!(f["segments"].as_u64() > Some(1), "{f}");
        assert_eq!(r["suppressed_entities"], 0, "{r}");
        for fragment in f["fragments"].as_array().expect("fragments") {
            assert_eq!(fragment["class_changed"], 0, "{fragment}");
        }
        assert_eq!(f["rejoin"]["beyond_chance"], 0, "{f}");
        // Every class value as the source has it, in both fragments.
        let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
        let counts = |table: &str| {
            texts(
                &db,
                &format!("SELECT diagnosis || ':' || COUNT(*) FROM {table} GROUP BY diagnosis ORDER BY diagnosis"),
            )
        };
        let source = {
            let csv = std::fs::read_to_string(dir.path().join("data/people.csv")).expect("csv");
            let mut n: std::collections::BTreeMap<String, usize> = Default::default();
            for line in csv.lines().skip(1) {
                let d = line.rsplit(';').next().expect("diagnosis");
                *n.entry(d.to_string()).or_default() += 1;
            }
            n.iter()
                .map(|(d, c)| format!("{d}:{c}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(counts("people__f1"), source);
        assert_eq!(counts("people__f2"), source);
        drop(db);
        // Facts about one person are matched against one table: attack says it reads no
        // fragments, and where their re-join attack is.
        let a = relanon(
            dir.path(),
            &["attack", "people.sql", "--fact", "people.age = 30"],
        );
        assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
        assert!(
            stderr(&a).contains("fragmentation.rejoin"),
            "{}",
            stderr(&a)
        );
        let v = run(dir.path(), &["verify", "people.sql"]);
        let text = stdout(&v);
        for check in [
            "PASS l-diversity",
            "PASS non-reconstructability",
            "PASS truthfulness",
        ] {
            assert!(text.contains(check), "{base} {check}:\n{text}");
        }
    }
}

/// A random table: `rows` rows of `qis` QI columns (values `v0`.. of a domain of
/// `domain` values under a two-level hierarchy) and a class of `classes` values; with
/// `trees` (under the k-anonymity repairs that take trees), up to `trees` child rows per
/// entity, each with one QI column of the same domain.
#[derive(Debug, Clone)]
struct Random {
    trees: usize,
    rows: usize,
    qis: usize,
    domain: usize,
    classes: usize,
    k: usize,
    base: &'static str,
    repair: &'static str,
    seed: u64,
}

fn random() -> impl proptest::strategy::Strategy<Value = Random> {
    use proptest::prelude::*;
    (
        2usize..=5,
        2usize..=6,
        2usize..=8,
        1usize..=4,
        prop::sample::select(&["topdown", "lattice"][..]),
        prop::sample::select(&["dgbe", "naive", "delta", "l-diversity"][..]),
        any::<u64>(),
        0usize..=3,
    )
        .prop_flat_map(|(qis, k, domain, classes, base, repair, seed, trees)| {
            let trees = if matches!(repair, "dgbe" | "naive") {
                trees
            } else {
                0
            };
            (2 * k..=150usize).prop_map(move |rows| Random {
                trees,
                rows,
                qis,
                domain,
                classes,
                k,
                base,
                repair,
                seed,
            })
        })
}

/// Writes the table and its declarations into `dir`.
fn random_table(r: &Random, dir: &Path) -> String {
    let mut state = r.seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names: Vec<String> = (0..r.qis).map(|q| format!("Q {q}")).collect();
    let mut csv = names.join(",") + ",class\n";
    let mut children = String::from("cid,eid,w\n");
    for row in 0..r.rows {
        if r.trees > 0 {
            csv.insert_str(csv.len(), &format!("{},", row + 1));
            for _ in 0..next() % (r.trees as u64 + 1) {
                let w = next() % r.domain as u64;
                let cid = children.lines().count();
                children += &format!("{cid},{},v{w}\n", row + 1);
            }
        }
        let first = (next() % r.domain as u64) as usize;
        for _ in 0..r.qis {
            // Columns lean on the first one, so mutual information has something to see.
            let v = if next() % 3 == 0 {
                first
            } else {
                (next() % r.domain as u64) as usize
            };
            csv += &format!("v{v},");
        }
        let c = (first + (next() % 2) as usize) % r.classes;
        csv += &format!("c{c}\n");
    }
    if r.repair == "l-diversity" {
        // At least two classes, so that l = 2 can be met.
        csv += "v0,".repeat(r.qis).as_str();
        csv += "c0\n";
        csv += "v1,".repeat(r.qis).as_str();
        csv += "c1\n";
    }
    let values: Vec<String> = (0..r.domain)
        .map(|v| format!("('v{v}', 'g{}')", v / 2))
        .collect();
    let hierarchy = format!("CREATE HIERARCHY h AS VALUES {};\n", values.join(", "));
    let mut text = if r.trees > 0 {
        let src = dir.join("src");
        std::fs::create_dir_all(&src).expect("mkdir");
        std::fs::write(src.join("t.csv"), format!("id,{csv}")).expect("csv");
        std::fs::write(src.join("c.csv"), children).expect("children");
        format!(
            "SET source = 'src';\nSET target = 'out.sqlite';\n{hierarchy}ALTER TABLE t ADD PRIMARY KEY (id);\nALTER TABLE c ADD PRIMARY KEY (cid);\nALTER TABLE c ADD FOREIGN KEY (eid) REFERENCES t (id);\nCREATE ENTITY e ON t (id);\nLABEL COLUMN c.w AS QUASI IDENTIFIER USING h;\n"
        )
    } else {
        std::fs::write(dir.join("t.csv"), csv).expect("csv");
        format!(
            "SET source = 't.csv';\nSET target = 'out.sqlite';\n{hierarchy}CREATE ENTITY e ON t;\n"
        )
    };
    for n in &names {
        text += &format!("LABEL COLUMN t.\"{n}\" AS QUASI IDENTIFIER USING h;\n");
    }
    let seed = r.seed % 1_000_000;
    text += "LABEL COLUMN t.class AS SENSITIVE;\n";
    text += &if r.repair == "l-diversity" {
        // TopDown serves k only: its place is taken by the default (ClusTree).
        let base = if r.base == "topdown" { "auto" } else { r.base };
        // Small segments, so that the cut and the pairs' check are exercised.
        let rows = seed % 12 + 1;
        format!("ANONYMIZE e WITH (model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'fragment', class = 'class', base = '{base}', segment_rows = {rows}, seed = {seed});\n")
    } else {
        format!(
            "ANONYMIZE e WITH (k = {}, algorithm = 'fragment', class = 'class', base = '{}', repair = '{}', seed = {seed});\n",
            r.k, r.base, r.repair
        )
    };
    text
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: crate::properties::cases("RELANON_FRAGMENT_CASES", 24),
        rng_seed: proptest::test_runner::RngSeed::Fixed(20261129),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]

    /// Any random table, with child rows or without, fragments, releases and verifies
    /// (inside anonymize and standalone).
    #[test]
    fn random_tables_fragment_and_verify(r in random()) {
        use relanon::pipeline::{anonymize, verify_release, Request};
        use relanon::progress::Progress;
        let dir = tempfile::tempdir().expect("tempdir");
        let text = random_table(&r, dir.path());
        // Entity trees keep the entity key in the anchor: verify reads the key map.
        let keys = (r.trees > 0).then(|| dir.path().join("keys.json"));
        let req = Request {
            text,
            base: dir.path().to_path_buf(),
            origin: "random.sql".into(),
            key_map: keys.clone(),
            ..Request::default()
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let outcome = rt
            .block_on(anonymize(&req, &Progress::new()))
            .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:#}\n{}", req.text)))?;
        proptest::prop_assert!(outcome.verdict.passed(), "{}", outcome.verdict.summary());
        // Thm 4.1 holds, so the paper's adversary links no record past one in k (under
        // delta its guarantee is a share of versions, not every pair).
        let f = outcome.report.fragmentation.as_ref().expect("a fragmentation's report");
        let anchored = !f.summary.fragments[0].child_tables.is_empty();
        proptest::prop_assert_eq!(anchored, r.trees > 0);
        let rejoin = f.rejoin.as_ref().expect("the re-join attack ran");
        if !matches!(f.summary.repair.as_str(), "delta") {
            proptest::prop_assert_eq!(rejoin.by_qi.beyond_chance, 0, "{:?}", rejoin);
        }
        let verdict = rt
            .block_on(verify_release(&req, None, keys.as_deref(), &Progress::new()))
            .expect("verify runs");
        proptest::prop_assert!(verdict.passed(), "{}\n{}", verdict.summary(), req.text);
    }
}

/// Two people given a diagnosis no one else has: fewer than k rows of that class in each
/// fragment, so the class alone pairs their rows.
fn with_a_rare_class(dir: &Path, anonymize: &str) {
    workspace(dir, anonymize);
    let path = dir.join("data/people.csv");
    let csv = std::fs::read_to_string(&path).expect("csv");
    let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
    for line in lines.iter_mut().skip(1).take(2) {
        let (head, _) = line.rsplit_once(';').expect("a diagnosis");
        *line = format!("{head};leprosy");
    }
    std::fs::write(&path, lines.join("\n") + "\n").expect("csv");
}

#[test]
fn the_re_join_attack_links_a_rare_class_and_anonymize_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    with_a_rare_class(dir.path(), FRAGMENT);
    let o = run(
        dir.path(),
        &["anonymize", "people.sql", "--overwrite", "--json"],
    );
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let rejoin = &r["fragmentation"]["rejoin"];
    assert!(
        rejoin["by_class"]["beyond_chance"].as_u64() > Some(0),
        "{rejoin}"
    );
    assert_eq!(rejoin["by_order"]["beyond_chance"], 0, "{rejoin}");
    let warned = String::from_utf8_lossy(&o.stderr);
    assert!(warned.contains("re-join attack"), "{warned}");
    assert!(warned.contains("repair = 'delta'"), "{warned}");
    // Under delta no row carries a class: the class alone links nothing.
    let line = FRAGMENT.replace("seed = 7", "seed = 7, repair = 'delta'");
    with_a_rare_class(dir.path(), &line);
    let r = released(dir.path());
    let rejoin = &r["fragmentation"]["rejoin"];
    assert_eq!(rejoin["by_class"]["beyond_chance"], 0, "{rejoin}");
}

/// Distinct l-diversity bounds no value's share, so a class that is mostly one value warns
/// of suppression only under the frequency form.
#[test]
fn a_skewed_class_warns_of_suppression_only_under_frequency_l_diversity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = "ANONYMIZE person WITH (model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'fragment', class = 'diagnosis', segment_rows = 40, seed = 7);";
    workspace(dir.path(), line);
    let path = dir.path().join("data/people.csv");
    let csv = std::fs::read_to_string(&path).expect("csv");
    // Three rows in four 'flu': above 1/l of the rows.
    let skewed: Vec<String> = csv
        .lines()
        .enumerate()
        .map(|(i, l)| match l.rsplit_once(';') {
            Some((head, _)) if i > 0 && i % 4 != 0 => format!("{head};flu"),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(&path, skewed.join("\n") + "\n").expect("csv");
    let said = |o: &std::process::Output| format!("{}{}", stdout(o), stderr(o));
    let o = run(dir.path(), &["anonymize", "people.sql", "--overwrite"]);
    assert!(!said(&o).contains("will be suppressed"), "{}", said(&o));
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("release.report.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(r["suppressed_entities"], 0, "{r}");
    let o = run(
        dir.path(),
        &[
            "anonymize",
            "people.sql",
            "--overwrite",
            "--with",
            "model = 'l-diversity', l = 2, diversity = 'probabilistic', algorithm = 'clustree'",
        ],
    );
    assert!(said(&o).contains("will be suppressed"), "{}", said(&o));
}

/// [`workspace`] as a family: the people and their hospital stays (0-2 each, a ward tied
/// to the diagnosis and a number of nights), a CSV directory with declared keys.
fn tree_workspace(dir: &Path, anonymize: &str) -> PathBuf {
    let decl = workspace(dir, anonymize);
    let hier = dir.join("h");
    std::fs::create_dir_all(&hier).expect("mkdir");
    for name in ["sex", "age", "zip", "education", "job"] {
        let file = format!("h_{name}.csv");
        std::fs::rename(dir.join("data").join(&file), hier.join(&file)).expect("move");
    }
    let wards = ["General", "Pulmonary", "Endocrine", "Neuro"];
    let mut stays = String::from("stay_id;person_id;ward;nights\n");
    let mut id = 0;
    for p in 0..ROWS {
        for s in 0..(p * 7 + 3) % 3 {
            id += 1;
            let ward = wards[(p + s * (p % 5)) % 4];
            stays.push_str(&format!("{id};{};{ward};{}\n", p + 1, (p * 3 + s) % 6 + 1));
        }
    }
    std::fs::write(dir.join("data/stays.csv"), stays).expect("stays");
    std::fs::write(
        hier.join("h_ward.csv"),
        "General;Ward;*\nPulmonary;Specialist;*\nEndocrine;Specialist;*\nNeuro;Specialist;*\n",
    )
    .expect("ward");
    let text = std::fs::read_to_string(&decl)
        .expect("read")
        .replace("'data/people.csv'", "'data'")
        .replace("'data/h_", "'h/h_")
        .replace(
            "CREATE ENTITY person ON people (id);",
            "CREATE HIERARCHY ward_h FROM CSV 'h/h_ward.csv';
             ALTER TABLE people ADD PRIMARY KEY (id);
             ALTER TABLE stays ADD PRIMARY KEY (stay_id);
             ALTER TABLE stays ADD FOREIGN KEY (person_id) REFERENCES people (id);
             CREATE ENTITY person ON people (id);
             LABEL COLUMN stays.ward AS QUASI IDENTIFIER USING ward_h;
             LABEL COLUMN stays.nights AS INSENSITIVE;",
        );
    std::fs::write(&decl, text).expect("write");
    decl
}

/// `anonymize --key-map` of a tree workspace: its report.
fn released_trees(dir: &Path) -> serde_json::Value {
    let o = run(
        dir,
        &[
            "anonymize",
            "people.sql",
            "--overwrite",
            "--json",
            "--key-map",
            "keys.json",
        ],
    );
    serde_json::from_str(&stdout(&o)).expect("json")
}

#[test]
fn entity_trees_are_fragmented_with_the_child_rows_in_the_anchor_and_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (trees, repair) in [("auto", "dgbe"), ("clustree", "naive")] {
        let line = FRAGMENT.replace(
            "seed = 7",
            &format!("seed = 7, trees = '{trees}', repair = '{repair}'"),
        );
        tree_workspace(dir.path(), &line);
        let r = released_trees(dir.path());
        assert_eq!(r["verified"], true, "{r}");
        let f = &r["fragmentation"];
        assert_eq!(f["fragments"][0]["table"], "people__f1", "{f}");
        assert_eq!(f["fragments"][0]["child_tables"][0], "stays", "{f}");
        assert!(f["fragments"][1].get("child_tables").is_none(), "{f}");
        let rejoin = &f["rejoin"];
        assert_eq!(rejoin["beyond_chance"], 0, "{rejoin}");
        let shape = rejoin["by_shape"].as_str().expect("shape");
        assert!(
            shape.contains("only people__f1 publishes tree shape"),
            "{shape}"
        );
        // Queries on the stays, and across the fragments, are answered.
        let q = &r["utility"]["fragment_queries"];
        assert!(q["across_count"].as_u64() > Some(0), "{q}");
        let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
        assert_eq!(tables(&db), ["people__f1", "people__f2", "stays"]);
        let (a, b) = (columns(&db, "people__f1"), columns(&db, "people__f2"));
        assert!(a.contains(&"id".to_string()), "{a:?}");
        assert!(!b.contains(&"id".to_string()), "{b:?}");
        let shared: Vec<&String> = a.iter().filter(|c| b.contains(c)).collect();
        assert_eq!(shared, ["diagnosis"], "{a:?} {b:?}");
        // The stays hang from the anchor, and from every anchor row that has them.
        let parent = texts(
            &db,
            "SELECT \"table\" FROM pragma_foreign_key_list('stays')",
        );
        assert_eq!(parent, ["people__f1"]);
        let orphans = texts(
            &db,
            "SELECT CAST(COUNT(*) AS TEXT) FROM stays WHERE person_id NOT IN (SELECT id FROM people__f1)",
        );
        assert_eq!(orphans, ["0"]);
        drop(db);
        verifies(
            dir.path(),
            &["verify", "people.sql", "--key-map", "keys.json"],
        );
    }
}

#[test]
fn verify_catches_a_tree_made_unique_in_the_anchor() {
    let dir = tempfile::tempdir().expect("tempdir");
    tree_workspace(dir.path(), FRAGMENT);
    released_trees(dir.path());
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
    // One more stay for one person: their tree is like no other.
    db.execute_batch(
        "INSERT INTO stays SELECT (SELECT MAX(stay_id) + 1 FROM stays), person_id, ward, nights
         FROM stays WHERE rowid = (SELECT MIN(rowid) FROM stays);",
    )
    .expect("tamper");
    drop(db);
    let v = relanon(
        dir.path(),
        &["verify", "people.sql", "--key-map", "keys.json"],
    );
    let text = stdout(&v);
    assert_eq!(v.status.code(), Some(1), "{text}{}", stderr(&v));
    assert!(text.contains("FAIL k-anonymity"), "{text}");
}

#[test]
fn what_fragments_of_entity_trees_do_not_take_is_refused() {
    let base = "ANONYMIZE person WITH (algorithm = 'fragment', class = 'diagnosis'";
    for (line, says) in [
        (
            format!("{base}, model = 'l-diversity', l = 2, diversity = 'distinct');"),
            "segments of entity trees are not built",
        ),
        (
            format!("{base}, k = 5, repair = 'delta');"),
            "use repair = 'dgbe' or 'naive'",
        ),
        (format!("{base}, k = 5, base = 'miraclex');"), "base"),
        (
            format!("{base}, k = 5, fragments = 3);"),
            "splits entity trees or a single table into 2 fragments",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        tree_workspace(dir.path(), &line);
        let o = relanon(dir.path(), &["anonymize", "people.sql"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        assert!(err.contains(says), "{line}: expected '{says}' in {err}");
        assert_eq!(err.trim().lines().count(), 1, "{line}: {err}");
        assert!(!dir.path().join("release.sqlite").exists(), "{line}");
    }
    // trees on a single table names nothing.
    refused(
        &format!("{base}, k = 5, trees = 'miraclex');"),
        &[],
        "has no child tables: drop trees",
    );
}

#[test]
fn a_qi_column_that_determines_one_in_the_other_fragment_is_warned_of() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = workspace_with(dir.path(), "QUASI IDENTIFIER USING zc_h", FRAGMENT);
    // The zip's code column, made a QI: the zip and its code determine each other.
    let codes: String = (47900..47920)
        .map(|z| format!("Z{z};Z{}*;*\n", z / 10))
        .collect();
    std::fs::write(dir.path().join("data/h_zc.csv"), codes).expect("codes");
    let text = std::fs::read_to_string(&decl).expect("read").replace(
        "CREATE ENTITY person",
        "CREATE HIERARCHY zc_h FROM CSV 'data/h_zc.csv';\n             CREATE ENTITY person",
    );
    std::fs::write(&decl, text).expect("write");
    let o = run(dir.path(), &["anonymize", "people.sql", "--json"]);
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let pairs = &r["fragmentation"]["cross_determined"];
    let held_apart = pairs
        .as_array()
        .expect("pairs")
        .iter()
        .any(|p| p[0] == "zip" && p[1] == "zcode" || p[0] == "zcode" && p[1] == "zip");
    let a = r["fragmentation"]["fragments"][0]["qi_columns"].to_string();
    let together = a.contains("\"zip\"") == a.contains("\"zcode\"");
    // Either the two land in one fragment, or the report and a warning say they do not.
    assert!(together || held_apart, "{r}");
    if held_apart {
        let err = stderr(&o);
        assert!(
            err.contains("zip determines zcode") || err.contains("zcode determines zip"),
            "{err}"
        );
    }
}

#[test]
fn a_view_reads_one_fragment_and_one_spanning_two_is_refused_naming_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    let r = released(dir.path());
    let qi = |i: usize| -> Vec<String> {
        r["fragmentation"]["fragments"][i]["qi_columns"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| c.as_str().expect("a name").to_string())
            .collect()
    };
    let (one, two) = (qi(0), qi(1));
    // Two columns of the first fragment and the class: read from people__f1.
    let view = format!(
        "{FRAGMENT} CREATE VIEW by_class AS SELECT {}, {}, diagnosis, COUNT(*) AS n FROM people GROUP BY 1, 2, 3;",
        one[0], one[1]
    );
    workspace(dir.path(), &view);
    released(dir.path());
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
    let sql = texts(&db, "SELECT sql FROM sqlite_master WHERE name = 'by_class'");
    assert!(sql[0].contains("\"people__f1\""), "{sql:?}");
    let n = texts(&db, "SELECT CAST(SUM(n) AS TEXT) FROM by_class");
    assert_eq!(n, [ROWS.to_string()]);
    drop(db);
    // A column of each: refused, naming both fragments; and SELECT *.
    for (name, select) in [
        (
            "spans",
            format!("SELECT {}, {} FROM people", one[0], two[0]),
        ),
        ("all", "SELECT * FROM people".to_string()),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        workspace(
            dir.path(),
            &format!("{FRAGMENT} CREATE VIEW {name} AS {select};"),
        );
        let o = relanon(dir.path(), &["anonymize", "people.sql"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("view {name} ")) && err.contains("people__f1 and people__f2"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!dir.path().join("release.sqlite").exists());
    }
}

#[test]
fn a_target_holding_another_runs_fragments_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    run(dir.path(), &["anonymize", "people.sql", "--quiet"]);
    let target = dir.path().join("release.sqlite");
    let before = std::fs::read(&target).expect("the first release");
    // Another run (another seed, a naive repair) into the same target.
    workspace(
        dir.path(),
        &FRAGMENT.replace("seed = 7", "seed = 8, repair = 'naive'"),
    );
    let o = relanon(dir.path(), &["anonymize", "people.sql"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("exists: pass --overwrite"), "{err}");
    assert_eq!(std::fs::read(&target).expect("still there"), before);
}

#[test]
fn plan_says_what_a_fragmentation_releases_in_place_of_the_entity_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    let text = stdout(&run(dir.path(), &["plan", "people.sql"]));
    assert!(
        text.contains("release: people is released as people__f1 and people__f2, both without a key, sharing only the class 'diagnosis'"),
        "{text}"
    );
    tree_workspace(dir.path(), FRAGMENT);
    let text = stdout(&run(dir.path(), &["plan", "people.sql"]));
    assert!(
        text.contains("people__f1, which keeps the entity key and the child tables (stays)"),
        "{text}"
    );
}

#[test]
fn a_child_column_naming_a_qi_of_the_key_less_fragment_is_warned_of() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = tree_workspace(dir.path(), FRAGMENT);
    // Each stay repeats its person's sex and education, published unchanged.
    let people = std::fs::read_to_string(dir.path().join("data/people.csv")).expect("people");
    let of: std::collections::HashMap<&str, (&str, &str)> = people
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(';').collect();
            (c[0], (c[2], c[6]))
        })
        .collect();
    let stays_path = dir.path().join("data/stays.csv");
    let stays = std::fs::read_to_string(&stays_path).expect("stays");
    let mut out = String::from("stay_id;person_id;ward;nights;p_sex;p_education\n");
    for l in stays.lines().skip(1) {
        let person = l.split(';').nth(1).expect("a person");
        let (sex, education) = of[person];
        out += &format!("{l};{sex};{education}\n");
    }
    std::fs::write(&stays_path, out).expect("stays");
    let text = std::fs::read_to_string(&decl).expect("read").replace(
        "LABEL COLUMN stays.nights AS INSENSITIVE;",
        "LABEL COLUMN stays.nights AS INSENSITIVE;
         LABEL COLUMN stays.p_sex AS SENSITIVE;
         LABEL COLUMN stays.p_education AS SENSITIVE;",
    );
    std::fs::write(&decl, text).expect("write");
    let o = run(
        dir.path(),
        &[
            "anonymize",
            "people.sql",
            "--json",
            "--key-map",
            "keys.json",
        ],
    );
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let second = r["fragmentation"]["fragments"][1]["qi_columns"].to_string();
    let pairs = r["fragmentation"]["cross_determined"].to_string();
    let err = stderr(&o);
    for (copy, qi) in [("stays.p_sex", "sex"), ("stays.p_education", "education")] {
        if second.contains(&format!("\"{qi}\"")) {
            assert!(pairs.contains(&format!("[\"{copy}\",\"{qi}\"]")), "{pairs}");
            assert!(err.contains(&format!("{copy} determines {qi}")), "{err}");
        } else {
            assert!(!pairs.contains(copy), "{qi} is the anchor's own: {pairs}");
        }
    }
    // One of the two is in the key-less fragment (the split is seeded): the check bit.
    assert!(
        second.contains("\"sex\"") || second.contains("\"education\""),
        "{second}"
    );
}

#[test]
fn the_report_lists_only_the_options_the_run_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    workspace(dir.path(), FRAGMENT);
    let params = released(dir.path())["params"].clone();
    assert_eq!(params["repair"], "dgbe", "{params}");
    for unread in ["delta", "segment_rows", "trees"] {
        assert!(params.get(unread).is_none(), "{unread}: {params}");
    }
    workspace(
        dir.path(),
        "ANONYMIZE person WITH (model = 'l-diversity', l = 2, diversity = 'distinct', algorithm = 'fragment', class = 'diagnosis', seed = 7);",
    );
    let params = released(dir.path())["params"].clone();
    assert_eq!(params["segment_rows"], 1000, "{params}");
    for unread in ["repair", "delta", "trees"] {
        assert!(params.get(unread).is_none(), "{unread}: {params}");
    }
    tree_workspace(dir.path(), FRAGMENT);
    let params = released_trees(dir.path())["params"].clone();
    assert_eq!(params["trees"], "auto", "{params}");
}
