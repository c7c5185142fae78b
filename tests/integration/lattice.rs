//! `algorithm = 'lattice'` through the binary on a warehouse with child tables: the release
//! at the chosen node verifies and stays within its budget, and a budget below the shape
//! floor is refused with the floor and the share that would do. `algorithm = 'hybrid'` (003) on
//! its Table 1: the paper's answer, verify counting the untruthful cells against the declared
//! budget, tampering caught, p = 0 the lattice's release byte for byte, seeds.

use crate::common::{copy_dir, fixture, realworld_workspace, relanon, stderr, stdout, table1_text};

#[test]
fn rental_is_released_by_global_recoding_or_refused_below_its_shape_floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let d = decl.to_str().expect("UTF-8 path");
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            d,
            "--with",
            "algorithm = 'lattice', max_suppression = 0",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("suppresses 6 of the 120 entities (5.0%)")
            && err.contains("max_suppression >= 0.05,"),
        "{err}"
    );
    assert!(!dir.path().join("rental-release.sqlite").exists());
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            d,
            "--json",
            "--key-map",
            "keys.json",
            "--with",
            "algorithm = 'lattice', max_suppression = 0.05",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["suppressed_entities"], 6, "{r}");
    assert!(r["smallest_ec"].as_u64().expect("smallest") >= 5, "{r}");
    // The node: one level per QI column, within its hierarchy.
    let recoding = r["recoding"].as_array().expect("the node is reported");
    let columns: Vec<&str> = recoding
        .iter()
        .map(|c| c["column"].as_str().expect("name"))
        .collect();
    assert_eq!(
        columns,
        [
            "customer.create_date",
            "rental.rental_date",
            "rental.inventory_id",
            "payment.payment_date"
        ]
    );
    for c in recoding {
        assert!(c["level"].as_u64() <= c["height"].as_u64(), "{c}");
    }
    let v = relanon(
        dir.path(),
        &[
            "verify",
            d,
            "--key-map",
            "keys.json",
            "--with",
            "algorithm = 'lattice', max_suppression = 0.05",
        ],
    );
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}

/// A workspace in `dir` holding 003's Table 1 (`table1/`) and its declarations, the
/// `ANONYMIZE` options replaced by `options`; returns the declarations' path.
fn table1(dir: &std::path::Path, options: &str) -> String {
    copy_dir(&fixture("table1"), &dir.join("table1"));
    let text = table1_text();
    let at = text.rfind("ANONYMIZE").expect("an ANONYMIZE statement");
    let decl = dir.join("decl.sql");
    std::fs::write(
        &decl,
        format!("{}ANONYMIZE person WITH ({options});\n", &text[..at]),
    )
    .expect("declarations");
    decl.to_str().expect("UTF-8 path").to_string()
}

/// Runs `relanon verify` on the workspace's release with the key map, `with` overriding.
fn verify_table1(dir: &std::path::Path, decl: &str, with: &str) -> std::process::Output {
    let mut args = vec!["verify", decl, "--key-map", "keys.json"];
    if !with.is_empty() {
        args.extend(["--with", with]);
    }
    relanon(dir, &args)
}

#[test]
fn hybrid_relocates_q4_within_its_budget_and_verify_counts_the_untruthful_cells() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table1(dir.path(), "k = 3, algorithm = 'hybrid', p = 10");
    let o = relanon(
        dir.path(),
        &["anonymize", &decl, "--json", "--key-map", "keys.json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
    // The spec's worked example: [1,1,3], q4 relocated at 2 of the 27 cells, LM 7.575 / 27.
    let levels: Vec<u64> = r["recoding"]
        .as_array()
        .expect("the node")
        .iter()
        .map(|c| c["level"].as_u64().expect("a level"))
        .collect();
    assert_eq!(levels, [1, 1, 3], "{r}");
    let lm = r["lm"].as_f64().expect("LM");
    assert!((lm - 7.575 / 27.0).abs() < 1e-4, "{lm}");
    let relocation = &r["relocation"];
    assert_eq!(relocation["relocated_cells"], 2, "{r}");
    assert_eq!(relocation["budget_cells"], 2, "{r}");
    assert_eq!(relocation["qi_cells"], 27, "{r}");
    assert_eq!(relocation["variant"], "deterministic", "{r}");
    let v = verify_table1(dir.path(), &decl, "");
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    assert!(
        stdout(&v).contains("PASS relocation budget"),
        "{}",
        stdout(&v)
    );
    // The declarations' budget, not the release's: at p = 7 the same two cells are one
    // more than floor(7% of 27) = 1 allows.
    let v = verify_table1(dir.path(), &decl, "p = 7");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("FAIL relocation budget: 1 violation")
            && stdout(&v).contains("2 QI cells are neither the source value nor an ancestor of it (people 2), more than the declared budget of 1 (p = 7% of 27 QI cells)"),
        "{}",
        stdout(&v)
    );
    // Declared as the lattice, the relocated cells are untruthful, each one a violation.
    let v = verify_table1(dir.path(), &decl, "algorithm = 'lattice'");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("FAIL truthfulness: 2 violations"),
        "{}",
        stdout(&v)
    );
}

#[test]
fn a_key_less_hybrid_release_is_counted_at_its_cheapest_pairing() {
    // Table 1 without its ids: verify pairs released rows with source rows by content. q4's
    // row (salary 14K) is released at the South Americans' labels; q7 also earns 14K, and
    // pairing the two the other way would cost 4 cells: the cheapest pairing costs q4's 2.
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table1(dir.path(), "k = 3, algorithm = 'hybrid', p = 10");
    let text = std::fs::read_to_string(&decl)
        .expect("declarations")
        .replace("ALTER TABLE people ADD PRIMARY KEY (id);", "")
        .replace(
            "CREATE ENTITY person ON people (id);",
            "CREATE ENTITY person ON people;",
        );
    std::fs::write(&decl, text).expect("declarations");
    let csv = dir.path().join("table1").join("people.csv");
    let rows: Vec<String> = std::fs::read_to_string(&csv)
        .expect("people.csv")
        .lines()
        .map(|l| l.split_once(',').expect("an id column").1.to_string())
        .collect();
    std::fs::write(&csv, rows.join("\n") + "\n").expect("people.csv");

    let o = relanon(dir.path(), &["anonymize", &decl, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
    assert_eq!(r["relocation"]["relocated_cells"], 2, "{r}");
    let verify = |with: &str| {
        let mut args = vec!["verify", decl.as_str()];
        if !with.is_empty() {
            args.extend(["--with", with]);
        }
        relanon(dir.path(), &args)
    };
    let v = verify("");
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    assert!(
        stdout(&v).contains("PASS relocation budget"),
        "{}",
        stdout(&v)
    );
    // floor(7% of 27) = 1: the cheapest pairing's 2 cells are one too many.
    let v = verify("p = 7");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("2 QI cells are neither the source value nor an ancestor of it (people 2), more than the declared budget of 1"),
        "{}",
        stdout(&v)
    );
    // No budget at all: the one row no truthful pairing places already costs a cell.
    let v = verify("p = 0");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("at least 1 QI cells are neither")
            && stdout(&v).contains("more than the declared budget of 0"),
        "{}",
        stdout(&v)
    );
}

#[test]
fn a_hybrid_release_tampered_past_its_budget_or_in_a_sensitive_cell_fails_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table1(dir.path(), "k = 3, algorithm = 'hybrid', p = 10");
    let o = relanon(dir.path(), &["anonymize", &decl, "--key-map", "keys.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let release = dir.path().join("release.sqlite");
    let pristine = std::fs::read(&release).expect("the release");
    let tamper = |sql: &str| {
        std::fs::write(&release, &pristine).expect("restore");
        let db = rusqlite::Connection::open(&release).expect("open");
        assert_eq!(db.execute(sql, []).expect("tamper"), 1, "{sql}");
    };
    // A third untruthful cell (one zip moved to another group's label): 3 > 2.
    tamper("UPDATE people SET zip = '49***' WHERE id = (SELECT min(id) FROM people WHERE zip = '47***')");
    let v = verify_table1(dir.path(), &decl, "");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("3 QI cells are neither the source value nor an ancestor of it (people 3), more than the declared budget of 2 (p = 10% of 27 QI cells)"),
        "{}",
        stdout(&v)
    );
    // A relocated row may change QI cells only: a sensitive value changed is untruthful.
    tamper("UPDATE people SET salary = '99K' WHERE id = 1");
    let v = verify_table1(dir.path(), &decl, "");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("FAIL truthfulness: 1 violation")
            && stdout(&v).contains("salary = '99K' differs from the source value")
            && stdout(&v).contains("PASS relocation budget"),
        "{}",
        stdout(&v)
    );
}

#[test]
fn hybrid_at_p_0_releases_exactly_what_the_lattice_releases() {
    for (k, suppression) in [(3, "0"), (2, "0"), (3, "0.12"), (4, "0.34")] {
        let release = |algorithm: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            let options = format!(
                "k = {k}, algorithm = '{algorithm}', max_suppression = {suppression}, seed = 11{}",
                if algorithm == "hybrid" { ", p = 0" } else { "" }
            );
            let decl = table1(dir.path(), &options);
            let o = relanon(dir.path(), &["anonymize", &decl, "--key-map", "keys.json"]);
            assert!(o.status.success(), "{options}: {}", stderr(&o));
            let bytes = |name: &str| std::fs::read(dir.path().join(name)).expect(name);
            (bytes("release.sqlite"), bytes("keys.json"))
        };
        assert!(
            release("hybrid") == release("lattice"),
            "k = {k}, max_suppression = {suppression}: the releases differ"
        );
    }
}

#[test]
fn hybrid_notes_a_seed_it_does_not_draw_from_and_a_p_below_1_and_a_seed_fixes_the_randomized_release(
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = table1(dir.path(), "k = 3, algorithm = 'hybrid', p = 0.5, seed = 3");
    let o = relanon(dir.path(), &["anonymize", &decl]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("relocation = 'deterministic' draws nothing at random")
            && err.contains("p = 0.5 is a percent"),
        "{err}"
    );
    let randomized = |seed: u64| {
        let dir = tempfile::tempdir().expect("tempdir");
        let options =
            format!("k = 3, algorithm = 'hybrid', p = 30, relocation = 'rstat', seed = {seed}");
        let decl = table1(dir.path(), &options);
        let o = relanon(dir.path(), &["anonymize", &decl, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("draws nothing"), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
        assert_eq!(r["relocation"]["variant"], "rstat", "{r}");
        assert!(r["relocation"]["test"]["x2"].as_f64().is_some(), "{r}");
        assert!(
            !r.to_string().contains("\"seed\""),
            "the seed is never reported: {r}"
        );
        std::fs::read(dir.path().join("release.sqlite")).expect("the release")
    };
    assert!(randomized(5) == randomized(5), "one seed, one release");
}

#[test]
fn a_statistical_hybrid_release_must_be_single_dimensional() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = "k = 3, algorithm = 'hybrid', p = 10, relocation = 'statistical', alpha = 0.05";
    let decl = table1(dir.path(), options);
    let o = relanon(
        dir.path(),
        &["anonymize", &decl, "--json", "--key-map", "keys.json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
    // The paper's example passes its test: X² 1.5 on 3 df, within 7.815.
    let test = &r["relocation"]["test"];
    assert!((test["x2"].as_f64().expect("X²") - 1.5).abs() < 1e-9, "{r}");
    assert_eq!(test["df"], 3, "{r}");
    let v = verify_table1(dir.path(), &decl, "");
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    assert!(
        stdout(&v).contains("PASS single-dimensional")
            && stdout(&v).contains("PASS relocation test"),
        "{}",
        stdout(&v)
    );
    // Held to alpha = 0.7, whose critical value on 3 df is 1.424, the same sizes fail,
    // recomputed from the source and the release.
    let v = verify_table1(dir.path(), &decl, "alpha = 0.7");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("FAIL relocation test: 1 violation")
            && stdout(&v).contains("X² = 1.5000 on 3 degrees of freedom"),
        "{}",
        stdout(&v)
    );
    // One nation published a level higher: still within the budget, but two levels.
    let db = rusqlite::Connection::open(dir.path().join("release.sqlite")).expect("open");
    db.execute("UPDATE people SET nation = 'AM' WHERE nation = 'N.AM'", [])
        .expect("tamper");
    drop(db);
    let v = verify_table1(dir.path(), &decl, "");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("FAIL single-dimensional: 1 violation")
            && stdout(&v).contains("people.nation: labels 'AM' and "),
        "{}",
        stdout(&v)
    );
}
