//! 001 Table II -> Table III: the paper's 2-anonymization groups {S1,S2} and {S3,S4}; S1 and S2
//! share {Science, Physics, Social}, S3 keeps History and Religion and loses Physics.

use std::collections::BTreeMap;

use crate::common::*;

/// Released course labels per source student, read through the key map.
fn courses_by_student(dir: &std::path::Path) -> BTreeMap<String, Vec<String>> {
    let map: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("keys.json")).expect("key map written"),
    )
    .expect("key map is JSON");
    let mut released_to_source = BTreeMap::new();
    for pair in map["tables"]["students"]["pairs"]
        .as_array()
        .expect("students pairs")
    {
        released_to_source.insert(
            pair["released"][0].to_string(),
            pair["source"][0]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| pair["source"][0].to_string()),
        );
    }
    let db = rusqlite::Connection::open(dir.join("release.sqlite")).expect("release opens");
    let mut stmt = db.prepare("SELECT s.\"sid\", c.\"course\" FROM \"students\" s JOIN \"courses\" c ON c.\"sid\" = s.\"sid\"").expect("query");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .expect("rows");
    for row in rows {
        let (sid, course) = row.expect("row");
        let source = released_to_source
            .get(&sid.to_string())
            .cloned()
            .expect("every released sid is in the key map");
        out.entry(source).or_default().push(course);
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

fn run(algorithm: &str) -> BTreeMap<String, Vec<String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = table2_text().replace(
        "algorithm = 'miracle'",
        &format!("algorithm = '{algorithm}'"),
    );
    anonymize_table2_with_key_map(dir.path(), &text);
    // The workspace's source still holds exactly the fixture's bytes.
    let bytes = |p: &std::path::Path| {
        fingerprint(p)
            .into_iter()
            .map(|(_, b)| b)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bytes(&fixture("table2")),
        bytes(&dir.path().join("table2")),
        "the source must not change"
    );
    // Standalone verify agrees.
    let v = relanon(
        dir.path(),
        &["verify", "decl.sql", "--key-map", "keys.json"],
    );
    assert!(
        v.status.success(),
        "verify failed: {}{}",
        stdout(&v),
        stderr(&v)
    );
    courses_by_student(dir.path())
}

#[test]
fn miracle_reproduces_table_iii() {
    for algorithm in ["miracle", "miraclex"] {
        let got = run(algorithm);
        let science = vec![
            "Physics".to_string(),
            "Science".to_string(),
            "Social".to_string(),
        ];
        let social = vec!["History".to_string(), "Religion".to_string()];
        assert_eq!(got.get("S1"), Some(&science), "{algorithm}: {got:?}");
        assert_eq!(got.get("S2"), Some(&science), "{algorithm}: {got:?}");
        assert_eq!(got.get("S3"), Some(&social), "{algorithm}: {got:?}");
        assert_eq!(got.get("S4"), Some(&social), "{algorithm}: {got:?}");
    }
}

#[test]
fn release_contract_holds_on_table_ii() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table2_workspace(dir.path(), &table2_text());
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("utf-8 path"), "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("--json prints the report");
    assert_eq!(report["equivalence_classes"], 2);
    assert_eq!(report["smallest_ec"], 2);
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("release opens");
    // Keys are pseudonyms, not the source's 'S1'..'S4'.
    let sids: Vec<i64> = column(&db, "SELECT \"sid\" FROM \"students\"");
    assert_eq!(
        sids,
        vec![1, 2, 3, 4],
        "released keys are a permutation of 1..=n, sorted"
    );
    // GPA (sensitive) is published unchanged.
    let mut gpas: Vec<f64> = column(&db, "SELECT \"gpa\" FROM \"students\"");
    gpas.sort_by(f64::total_cmp);
    assert_eq!(gpas, vec![2.34, 3.12, 3.72, 4.0]);
    // Every released FK joins.
    let dangling: i64 = db
        .query_row("SELECT COUNT(*) FROM \"books\" b LEFT JOIN \"courses\" c ON c.\"scid\" = b.\"scid\" WHERE c.\"scid\" IS NULL", [], |r| r.get(0))
        .expect("q");
    assert_eq!(dangling, 0);
    // report.json sits beside the release.
    assert!(dir.path().join("release.report.json").exists());
}

#[test]
fn key_pseudonyms_are_not_replayable() {
    // Without a seed, two runs draw different permutations.
    let mut maps = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("tempdir");
        anonymize_table2_with_key_map(dir.path(), &table2_text());
        maps.push(std::fs::read_to_string(dir.path().join("keys.json")).expect("key map"));
    }
    assert_ne!(
        maps[0], maps[1],
        "unseeded pseudonyms must differ between runs"
    );
    // A secret key seed never reaches the report: neither as a parameter nor as its value.
    // (`query_seed`, which only picks the utility queries, is public and may be reported.)
    let secret = "8675309421";
    let text = table2_text().replace("k = 2", &format!("k = 2, seed = {secret}"));
    assert!(text.contains(secret), "the Table II policy names k = 2");
    let dir = tempfile::tempdir().expect("tempdir");
    anonymize_table2_with_key_map(dir.path(), &text);
    let report = std::fs::read_to_string(dir.path().join("release.report.json")).expect("report");
    let json: serde_json::Value = serde_json::from_str(&report).expect("report is JSON");
    assert!(
        json["params"].get("seed").is_none() && !report.contains(secret),
        "the report must not carry the key seed: {report}"
    );
}

/// Naming the model the file already has changes nothing: its k, algorithm and the
/// algorithm's options stay (the file says k-anonymity by giving k). Another model still
/// drops them.
#[test]
fn with_the_files_own_model_keeps_its_parameters() {
    for with in ["model = 'k-anonymity'", "model = 'K-Anonymity'"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = anonymize_table2(dir.path(), &table2_text(), &["--with", with, "--json"]);
        assert!(o.status.success(), "--with \"{with}\": {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
        assert_eq!(report["params"]["model"]["k"], 2, "{with}");
        assert_eq!(report["params"]["algorithm"], "miracle", "{with}");
        assert_eq!(report["params"]["threshold"], 1.0, "{with}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let o = anonymize_table2(
        dir.path(),
        &table2_text(),
        &["--with", "model = 'l-diversity'"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("l-diversity needs l"), "{}", stderr(&o));
}

/// `--with` replaces the options it names and keeps the file's others; verify hears the same
/// override, and a malformed or unknown option, or one the algorithm does not read, is refused
/// with exit code 2.
#[test]
fn with_overrides_anonymize_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = anonymize_table2(
        dir.path(),
        &table2_text(),
        &[
            "--with",
            "k = 4, algorithm = 'miraclex'",
            "--json",
            "--key-map",
            "keys.json",
        ],
    );
    assert!(o.status.success(), "anonymize failed: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["params"]["model"]["k"], 4);
    assert_eq!(report["params"]["algorithm"], "miraclex");
    // Kept from the file's ANONYMIZE statement.
    assert_eq!(report["params"]["threshold"], 1.0);
    assert!(report["smallest_ec"].as_u64().expect("smallest EC") >= 4);
    // Four students in one class: 4-anonymous, not 5-anonymous.
    for (with, code) in [("k = 4", 0), ("k = 5", 1)] {
        let v = relanon(
            dir.path(),
            &[
                "verify",
                "decl.sql",
                "--with",
                with,
                "--key-map",
                "keys.json",
            ],
        );
        assert_eq!(
            v.status.code(),
            Some(code),
            "verify --with '{with}': {}",
            stdout(&v)
        );
    }
    for (with, says) in [
        ("k = ", "expected a value"),
        ("kk = 3", "unknown option 'kk'"),
        (
            "threshold = 2",
            "threshold must be a number between 0 and 1, found 2",
        ),
        (
            "algorithm = 'nope'",
            "unknown algorithm 'nope'; use 'miracle'",
        ),
        // Each algorithm owns its options: another's is refused, saying whose it is.
        ("m = 8", "m is an option of clustree, ctoff, not of miracle"),
        (
            "algorithm = 'ctoff', climit = 3",
            "climit is an option of miracle, miraclex, dmiracle",
        ),
    ] {
        let o = anonymize_table2(dir.path(), &table2_text(), &["--with", with, "--overwrite"]);
        assert_eq!(o.status.code(), Some(2), "--with '{with}' was accepted");
        assert!(stderr(&o).contains(says), "--with '{with}': {}", stderr(&o));
    }
    // Naming another algorithm drops the file's options of the one it replaces.
    let o = anonymize_table2(
        dir.path(),
        &table2_text(),
        &["--with", "algorithm = 'ctoff'", "--overwrite", "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["params"]["algorithm"], "ctoff");
    assert!(report["params"].get("threshold").is_none(), "{report}");
}
