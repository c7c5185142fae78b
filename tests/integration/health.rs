//! A health record (fixtures/realworld/health.sql and its CSV export health/): `init`'s
//! proposal, unedited, releases no identifier, no id and no twin of a generalized
//! quasi-identifier; every code and description is proposed SENSITIVE or follows its twin,
//! and is marked for review; the CSV export without keys gets the same clinical family as
//! the SQLite form. verify fails a release whose labels carry a near-unique column's values,
//! and one that publishes a code beside its generalized description.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::{copy_dir, fixture, relanon, stderr, stdout};

/// Builds `health.sqlite` in `dir` from the fixture script.
fn sqlite_source(dir: &Path) {
    let db = rusqlite::Connection::open(dir.join("health.sqlite")).expect("create");
    let text =
        std::fs::read_to_string(fixture("realworld/health.sql")).expect("read fixture script");
    db.execute_batch(&text).expect("run fixture script");
}

/// The values of `column` in the fixture's CSV export of `table` (a header line, then
/// comma-separated rows; quoted cells hold commas).
fn csv_column(table: &str, column: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixture(&format!("realworld/health/{table}.csv")))
        .expect("read fixture csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == column)
        .expect("the column is in the header");
    lines
        .filter_map(|l| split_csv(l).into_iter().nth(at))
        .filter(|v| !v.is_empty())
        .collect()
}

fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut cell, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    out.push(cell);
    out
}

/// Every value that identifies a person or a row of the source: keys, names, numbers.
fn identifying_values() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (table, column) in [
        ("patients", "Id"),
        ("patients", "SSN"),
        ("patients", "FIRST"),
        ("patients", "LAST"),
        ("patients", "ADDRESS"),
        ("patients", "BIRTHPLACE"),
        ("encounters", "Id"),
        ("careplans", "Id"),
        ("claims", "Id"),
    ] {
        out.extend(csv_column(table, column));
    }
    out
}

/// The lines of a proposal that label a column named like a code or its description.
fn coded_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("LABEL COLUMN"))
        .filter(|l| {
            let column = l.split('.').nth(1).unwrap_or_default();
            column.contains("CODE\"") || column.contains("DESCRIPTION\"")
        })
        .collect()
}

/// The family tables a proposal places under the entity, in order.
fn family(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains(": in the family, under "))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect()
}

/// init, plan and anonymize with the unedited proposal; returns the proposal and plan's
/// output.
fn release(dir: &Path, source: &str, target: &str) -> (String, String) {
    let o = relanon(dir, &["init", source]);
    assert!(o.status.success(), "init {source}: {}", stderr(&o));
    let decl = format!("{source}.decl.sql").replace(".sqlite.decl", ".decl");
    let text = std::fs::read_to_string(dir.join(&decl)).expect("declarations written");
    let p = relanon(dir, &["plan", &decl]);
    assert!(p.status.success(), "plan: {}", stderr(&p));
    let a = relanon(dir, &["anonymize", &decl, "--target", target]);
    assert!(a.status.success(), "anonymize: {}\n{text}", stderr(&a));
    assert!(stdout(&a).contains("verify: passed"), "{}", stdout(&a));
    (text, stdout(&p))
}

/// Whether any identifying value occurs in the bytes of the release file.
fn leaked(path: &Path, values: &BTreeSet<String>) -> Vec<String> {
    let bytes = std::fs::read(path).expect("read release");
    let text = String::from_utf8_lossy(&bytes);
    values
        .iter()
        .filter(|v| v.len() >= 4 && text.contains(v.as_str()))
        .cloned()
        .collect()
}

#[test]
fn the_unedited_proposal_releases_no_identifier_and_no_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(dir.path());
    let (text, plan) = release(dir.path(), "health.sqlite", "release.sqlite");
    let leaks = leaked(&dir.path().join("release.sqlite"), &identifying_values());
    assert!(
        leaks.is_empty(),
        "identifying values in the release: {leaks:?}"
    );
    // The patient's key under another name is an identifier, not a category.
    let claims = text
        .lines()
        .find(|l| l.starts_with("LABEL COLUMN \"claims\".\"PATIENTID\""))
        .expect("claims.PATIENTID is labelled");
    assert!(claims.contains("AS IDENTIFIER;"), "{claims}");
    // Every code and description is reviewed, and none is published as a measure.
    let coded = coded_lines(&text);
    assert!(coded.len() >= 12, "{coded:#?}");
    for line in coded {
        assert!(line.contains("-- review:"), "{line}");
        assert!(!line.contains("AS INSENSITIVE"), "{line}");
    }
    // No label names its members; the sensitive columns get a model proposed for them.
    assert!(!text.contains(" .. "), "{text}");
    assert!(
        text.contains("-- ANONYMIZE \"patients\" WITH (model = 'l-diversity', l = 5);"),
        "{text}"
    );
    assert!(
        !plan.contains("is published unchanged but determines"),
        "no twin published: {plan}"
    );
    assert!(
        plan.contains("quasi-identifiers below the entity"),
        "{plan}"
    );
}

#[test]
fn the_csv_export_gets_the_same_clinical_family() {
    let sqlite_dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(sqlite_dir.path());
    let o = relanon(sqlite_dir.path(), &["init", "health.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sqlite =
        std::fs::read_to_string(sqlite_dir.path().join("health.decl.sql")).expect("written");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture("realworld/health"), &dir.path().join("health"));
    let (csv, _) = release(dir.path(), "health", "csv-release.sqlite");
    let clinical: BTreeSet<String> = family(&sqlite).into_iter().collect();
    for t in [
        "encounters",
        "conditions",
        "medications",
        "procedures",
        "careplans",
        "claims",
    ] {
        assert!(clinical.contains(t), "{t} in the SQLite family: {sqlite}");
    }
    let from_csv: BTreeSet<String> = family(&csv).into_iter().collect();
    assert_eq!(clinical, from_csv, "{csv}");
    assert!(
        csv.contains("ALTER TABLE \"conditions\" ADD FOREIGN KEY (\"ENCOUNTER\") REFERENCES \"encounters\" (\"Id\"); -- inferred"),
        "{csv}"
    );
    let leaks = leaked(
        &dir.path().join("csv-release.sqlite"),
        &identifying_values(),
    );
    assert!(
        leaks.is_empty(),
        "identifying values in the release: {leaks:?}"
    );
}

/// Runs `anonymize <name>.decl.sql --target <name>.sqlite`, which must refuse to write a
/// release its verifier fails (exit 2, nothing committed); returns what it says.
fn refused_by_verify(dir: &Path, name: &str) -> String {
    let (decl, target) = (format!("{name}.decl.sql"), format!("{name}.sqlite"));
    let a = relanon(dir, &["anonymize", &decl, "--target", &target]);
    let err = stderr(&a);
    assert_eq!(a.status.code(), Some(2), "{}{err}", stdout(&a));
    assert!(!dir.join(&target).exists(), "nothing committed");
    err
}

/// The proposal with one line replaced (the line starting `start`) by `line`.
fn edited(text: &str, start: &str, line: &str) -> String {
    assert!(text.contains(start), "{start} in {text}");
    text.lines()
        .map(|l| if l.starts_with(start) { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn verify_fails_labels_that_carry_member_values_and_published_twins() {
    let dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(dir.path());
    let o = relanon(dir.path(), &["init", "health.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("health.decl.sql")).expect("written");

    // A hand-written hierarchy whose labels are ranges of the patients' keys, as an ordered
    // grouping by members would write it.
    let mut ids = csv_column("claims", "PATIENTID");
    ids.sort();
    ids.dedup();
    let rows: Vec<String> = ids
        .chunks(40)
        .flat_map(|run| {
            let label = format!("[{} .. {}]", run[0], run[run.len() - 1]);
            run.iter()
                .map(move |v| format!("('{v}', '{label}')"))
                .collect::<Vec<_>>()
        })
        .collect();
    let labelled = edited(
        &text,
        "LABEL COLUMN \"claims\".\"PATIENTID\"",
        &format!(
            "CREATE HIERARCHY by_members AS VALUES {};\nLABEL COLUMN \"claims\".\"PATIENTID\" AS QUASI IDENTIFIER USING by_members;",
            rows.join(", ")
        ),
    );
    std::fs::write(dir.path().join("labels.decl.sql"), labelled).expect("write");
    let err = refused_by_verify(dir.path(), "labels");
    assert!(err.contains("FAIL labels"), "{err}");
    assert!(err.contains("claims.PATIENTID: label '["), "{err}");

    // The encounter's description generalized, its code published unchanged beside it.
    let twin = edited(
        &text,
        "LABEL COLUMN \"encounters\".\"CODE\"",
        "LABEL COLUMN \"encounters\".\"CODE\" AS INSENSITIVE;",
    );
    std::fs::write(dir.path().join("twin.decl.sql"), &twin).expect("write");
    let p = relanon(dir.path(), &["plan", "twin.decl.sql"]);
    assert!(
        stdout(&p).contains("encounters.CODE is published unchanged but determines encounters."),
        "{}",
        stdout(&p)
    );
    let err = refused_by_verify(dir.path(), "twin");
    assert!(err.contains("FAIL twins"), "{err}");
    assert!(
        err.contains("encounters.CODE determines encounters.ENCOUNTERCLASS"),
        "{err}"
    );
}

/// The distinct values of a SQL query's one column.
fn strings(db: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = db.prepare(sql).expect("prepare");
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .expect("query");
    rows.map(|r| r.expect("a row")).collect()
}

#[test]
fn attack_reads_through_twins_and_tests_an_adversary_beyond_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(dir.path());
    let o = relanon(dir.path(), &["init", "health.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("health.decl.sql")).expect("written");
    // The encounter type's code published unchanged beside its generalized class: written
    // only for study, since verify refuses it.
    let twin = edited(
        &text,
        "LABEL COLUMN \"encounters\".\"CODE\"",
        "LABEL COLUMN \"encounters\".\"CODE\" AS INSENSITIVE;",
    );
    std::fs::write(dir.path().join("twin.decl.sql"), &twin).expect("write");
    let a = relanon(
        dir.path(),
        &[
            "anonymize",
            "twin.decl.sql",
            "--target",
            "twin.sqlite",
            "--allow-unverified",
        ],
    );
    assert!(
        dir.path().join("twin.sqlite").exists(),
        "{}{}",
        stdout(&a),
        stderr(&a)
    );
    let facts = [
        "--fact",
        "patients.GENDER = 'M'",
        "--fact",
        "encounters.ENCOUNTERCLASS = 'emergency'",
    ];
    let mut args = vec!["attack", "twin.decl.sql", "--release", "twin.sqlite"];
    args.extend(facts);
    let o = relanon(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("summary: "), "{out}");
    assert!(
        out.contains("encounters.CODE determines encounters.ENCOUNTERCLASS"),
        "{out}"
    );
    // The true count: filtering the release on the codes of emergency encounters.
    let source = rusqlite::Connection::open(dir.path().join("health.sqlite")).expect("open");
    let codes = strings(
        &source,
        "SELECT DISTINCT \"CODE\" FROM encounters WHERE \"ENCOUNTERCLASS\" = 'emergency'",
    );
    let quoted: Vec<String> = codes.iter().map(|c| format!("'{c}'")).collect();
    let release = rusqlite::Connection::open(dir.path().join("twin.sqlite")).expect("open");
    let expected: i64 = release
        .query_row(
            &format!("SELECT COUNT(DISTINCT p.\"Id\") FROM patients p JOIN encounters e ON e.\"PATIENT\" = p.\"Id\" WHERE p.\"GENDER\" IN ('M', '*') AND e.\"CODE\" IN ({})", quoted.join(", ")),
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert!(
        out.contains(&format!("candidates: {expected} of ")),
        "{expected} expected: {out}"
    );

    // The adversary who knows one diagnosis: evaluated, and said to be outside the model;
    // a posterior of many values is folded.
    let o = relanon(
        dir.path(),
        &[
            "attack",
            "twin.decl.sql",
            "--release",
            "twin.sqlite",
            "--fact",
            "encounters.REASONCODE = '195662009'",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("note: the facts name encounters.REASONCODE, published unchanged"),
        "{out}"
    );
    assert!(out.contains("more values ("), "{out}");
    // A key or an identifier is still refused: it is not published as the source holds it.
    let o = relanon(
        dir.path(),
        &[
            "attack",
            "twin.decl.sql",
            "--release",
            "twin.sqlite",
            "--fact",
            "patients.LAST = 'Crist804'",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("an IDENTIFIER"), "{}", stderr(&o));
}

#[test]
fn verify_says_when_the_key_map_is_from_another_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(dir.path());
    let o = relanon(dir.path(), &["init", "health.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (target, map) in [("one.sqlite", "one.json"), ("two.sqlite", "two.json")] {
        let a = relanon(
            dir.path(),
            &[
                "anonymize",
                "health.decl.sql",
                "--target",
                target,
                "--key-map",
                map,
            ],
        );
        assert!(a.status.success(), "{}", stderr(&a));
    }
    let v = relanon(
        dir.path(),
        &[
            "verify",
            "health.decl.sql",
            "--release",
            "one.sqlite",
            "--key-map",
            "two.json",
        ],
    );
    assert_eq!(v.status.code(), Some(2), "{}", stdout(&v));
    let err = stderr(&v);
    assert!(
        err.contains("was written by another anonymize run than the one that made this release"),
        "{err}"
    );
    let v = relanon(
        dir.path(),
        &[
            "verify",
            "health.decl.sql",
            "--release",
            "one.sqlite",
            "--key-map",
            "one.json",
        ],
    );
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    // The report counts the classes verify sees: distinct released trees.
    let classes = stdout(&v)
        .split("equivalence classes: ")
        .nth(1)
        .and_then(|t| t.split(',').next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .expect("verify prints the classes");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("one.report.json")).expect("report written"),
    )
    .expect("json");
    assert_eq!(report["equivalence_classes"].as_u64(), Some(classes));
}

/// The declarations `init` proposed for `health.sqlite` in `dir`, with `RACE` made the
/// SENSITIVE class and `anonymize` set to `line`.
fn fragmented_proposal(dir: &Path, line: &str) {
    let decl = dir.join("health.decl.sql");
    let text = std::fs::read_to_string(&decl).expect("read");
    let text = edited(
        &text,
        "LABEL COLUMN \"patients\".\"RACE\"",
        "LABEL COLUMN \"patients\".\"RACE\" AS SENSITIVE;",
    );
    let text = edited(&text, "ANONYMIZE \"patients\"", line);
    std::fs::write(&decl, text).expect("write");
}

#[test]
fn the_record_verifies_in_partitions_and_fragments_with_its_encounters_in_the_anchor() {
    let dir = tempfile::tempdir().expect("tempdir");
    sqlite_source(dir.path());
    release(dir.path(), "health.sqlite", "plain.sqlite");
    // Checked a partition at a time, the claims and conditions (reaching the patient by two
    // paths) are read with the columns that split their rows.
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            "health.decl.sql",
            "--target",
            "plain.sqlite",
            "--overwrite",
            "--key-map",
            "keys.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = std::process::Command::new(env!("CARGO_BIN_EXE_relanon"))
        .current_dir(dir.path())
        .args([
            "verify",
            "health.decl.sql",
            "--release",
            "plain.sqlite",
            "--key-map",
            "keys.json",
        ])
        .env("RELANON_VERIFY_PARTITIONS", "3")
        .output()
        .expect("the relanon binary runs");
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
    // Fragmented: the patients' QI columns in two, the encounters and all below them with
    // the anchor, verified through the key map.
    fragmented_proposal(
        dir.path(),
        "ANONYMIZE \"patients\" WITH (k = 5, algorithm = 'fragment', class = 'RACE', seed = 3);",
    );
    let a = relanon(
        dir.path(),
        &[
            "anonymize",
            "health.decl.sql",
            "--target",
            "fragments.sqlite",
            "--key-map",
            "fkeys.json",
        ],
    );
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(stdout(&a).contains("verify: passed"), "{}", stdout(&a));
    let db = rusqlite::Connection::open(dir.path().join("fragments.sqlite")).expect("open");
    let tables = strings(
        &db,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    );
    assert!(tables.contains(&"patients__f1".to_string()), "{tables:?}");
    assert!(tables.contains(&"patients__f2".to_string()), "{tables:?}");
    assert!(tables.contains(&"encounters".to_string()), "{tables:?}");
    assert!(!tables.contains(&"patients".to_string()), "{tables:?}");
    drop(db);
    let leaks = leaked(&dir.path().join("fragments.sqlite"), &identifying_values());
    assert!(
        leaks.is_empty(),
        "identifying values in the release: {leaks:?}"
    );
    let v = relanon(
        dir.path(),
        &[
            "verify",
            "health.decl.sql",
            "--release",
            "fragments.sqlite",
            "--key-map",
            "fkeys.json",
        ],
    );
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
}
