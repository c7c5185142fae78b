//! The 001 Sec. V university, generated as SQLite and as Parquet, anonymized by MiRaCle and
//! MiRaCleX; standalone verify passes with the key map and catches a tampered release.

use std::path::Path;

use crate::common::*;

fn generate(dir: &Path, out: &str) {
    let o = relanon(
        dir,
        &[
            "generate",
            "university",
            "--students",
            "120",
            "--seed",
            "7",
            "--out",
            out,
        ],
    );
    assert!(o.status.success(), "generate failed: {}", stderr(&o));
}

fn decl(dir: &Path, algorithm: &str) -> String {
    let text = std::fs::read_to_string(root().join("sql/university.sql"))
        .expect("sql/university.sql")
        .replace(
            "algorithm = 'miraclex'",
            &format!("algorithm = '{algorithm}'"),
        )
        .replace(
            "'../fixtures/",
            &format!("'{}/", root().join("fixtures").display()),
        );
    std::fs::write(dir.join("university.sql"), text).expect("write");
    "university.sql".to_string()
}

fn anonymize_and_verify(
    dir: &Path,
    source: &str,
    target: &str,
    algorithm: &str,
) -> serde_json::Value {
    let d = decl(dir, algorithm);
    let o = anonymize_with_key_map(dir, &d, source, target);
    assert!(
        o.status.success(),
        "{algorithm} on {source}: {}",
        stderr(&o)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert!(
        report["smallest_ec"].as_u64().expect("smallest_ec") >= 5,
        "{report}"
    );
    let v = verify_with_key_map(dir, &d, source, target);
    assert!(
        v.status.success(),
        "standalone verify: {}{}",
        stdout(&v),
        stderr(&v)
    );
    report
}

#[test]
fn university_on_sqlite_and_parquet_with_both_algorithms() {
    let dir = tempfile::tempdir().expect("tempdir");
    generate(dir.path(), "uni.sqlite");
    generate(dir.path(), "uni-parquet");
    for algorithm in ["miracle", "miraclex"] {
        let a = anonymize_and_verify(dir.path(), "uni.sqlite", "rel.sqlite", algorithm);
        let b = anonymize_and_verify(dir.path(), "uni-parquet", "rel-parquet", algorithm);
        // The same warehouse through either format gives the same anonymization.
        assert_eq!(a["lm"], b["lm"], "{algorithm}");
        assert_eq!(
            a["equivalence_classes"], b["equivalence_classes"],
            "{algorithm}"
        );
        assert!(dir.path().join("rel-parquet/report.json").exists());
    }
}

#[test]
fn verify_catches_a_tampered_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    generate(dir.path(), "uni.sqlite");
    anonymize_and_verify(dir.path(), "uni.sqlite", "rel.sqlite", "miraclex");
    let d = decl(dir.path(), "miraclex");
    // Give one student a course label no student in its EC shares: it is singled out.
    let db = rusqlite::Connection::open(dir.path().join("rel.sqlite")).expect("open");
    db.execute("UPDATE \"courses\" SET \"course\" = 'Tampered' WHERE \"scid\" = (SELECT MIN(\"scid\") FROM \"courses\")", []).expect("update");
    drop(db);
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "rel.sqlite");
    assert_eq!(v.status.code(), Some(1), "{}{}", stdout(&v), stderr(&v));
    assert!(stdout(&v).contains("truthfulness"), "{}", stdout(&v));
}

#[test]
fn demo_runs_on_sqlite_and_parquet() {
    let dir = tempfile::tempdir().expect("tempdir");
    for extra in [None, Some("--parquet")] {
        let mut args = vec!["demo", "--out", "out"];
        args.extend(extra);
        let o = relanon(dir.path(), &args);
        assert!(o.status.success(), "demo {extra:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("verify: passed"), "{}", stdout(&o));
    }
    assert!(dir.path().join("out/university-release.sqlite").exists());
    assert!(dir
        .path()
        .join("out/university-parquet-release/students.parquet")
        .exists());
}

/// Relocation instead of suppression (`relocate`, relanon's own post-pass) on whole trees:
/// MiRaCleX at k = 5 leaves four students without a class; with `relocate = 1` each joins the
/// class whose tree fits in its own (its extra courses and books suppressed), at one
/// untruthful QI cell in all, and standalone verify traces every row through the key map:
/// the release passes against its declarations and fails against declarations without
/// `relocate`.
#[test]
fn relocation_instead_of_suppression_keeps_whole_trees_within_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    generate(dir.path(), "uni.sqlite");
    let plain = anonymize_and_verify(dir.path(), "uni.sqlite", "plain.sqlite", "miraclex");
    assert_eq!(plain["suppressed_entities"], 4, "{plain}");
    let d = decl(dir.path(), "miraclex");
    let path = dir.path().join(&d);
    let text = std::fs::read_to_string(&path).expect("declarations");
    let relocating = text.replace(
        "algorithm = 'miraclex'",
        "algorithm = 'miraclex', relocate = 1",
    );
    std::fs::write(&path, &relocating).expect("write");
    let o = anonymize_with_key_map(dir.path(), &d, "uni.sqlite", "moved.sqlite");
    assert!(o.status.success(), "{}", stderr(&o));
    let moved: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert_eq!(moved["suppressed_entities"], 0, "{moved}");
    assert_eq!(moved["equivalence_classes"], plain["equivalence_classes"]);
    let r = &moved["relocation"];
    assert_eq!(
        (&r["relocated_cells"], &r["relocated_entities"]),
        (&1.into(), &4.into()),
        "{r}"
    );
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "moved.sqlite");
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("PASS relocation budget"),
        "{}",
        stdout(&v)
    );
    std::fs::write(&path, &text).expect("write");
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "moved.sqlite");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(stdout(&v).contains("FAIL truthfulness"), "{}", stdout(&v));
    // In two shards each spends its own share of the budget; the run's report adds them up.
    std::fs::write(&path, &relocating).expect("write");
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            &d,
            "--source",
            "uni.sqlite",
            "--target",
            "sharded.sqlite",
            "--key-map",
            "keys.json",
            "--shards",
            "2",
            "--overwrite",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let sharded: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    let r = &sharded["relocation"];
    assert!(
        r["relocated_cells"].as_u64() <= r["budget_cells"].as_u64()
            && r["budget_cells"].as_u64() <= Some(21)
            && r["qi_cells"] == moved["relocation"]["qi_cells"],
        "{r}"
    );
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "sharded.sqlite");
    assert!(v.status.success(), "{}", stdout(&v));
}

/// Hybrid on entity trees (003 on the lattice, the spec's Sec. 4.4 plan item 2): at p = 0
/// without the leftovers' embedding it releases the lattice's tables byte for byte; at
/// p = 1 it suppresses fewer students than the lattice at the same `max_suppression`
/// (relocating between trees of one shape, embedding the rest into smaller trees), within its
/// budget, and standalone verify traces it through the key map; declared at half the budget,
/// the same release fails, naming the count and the budget.
#[test]
fn hybrid_on_trees_suppresses_fewer_entities_than_the_lattice_within_its_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    generate(dir.path(), "uni.sqlite");
    let d = decl(dir.path(), "miraclex");
    let path = dir.path().join(&d);
    let text = std::fs::read_to_string(&path).expect("declarations");
    let declare = |options: &str| {
        let declared: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with("ANONYMIZE student WITH") {
                    format!("ANONYMIZE student WITH (k = 3, seed = 1, max_suppression = 0.8, {options});")
                } else {
                    l.to_string()
                }
            })
            .collect();
        std::fs::write(&path, declared.join("\n")).expect("write");
    };
    let run = |options: &str, target: &str| -> serde_json::Value {
        declare(options);
        let o = anonymize_with_key_map(dir.path(), &d, "uni.sqlite", target);
        assert!(o.status.success(), "{options}: {}", stderr(&o));
        serde_json::from_str(&stdout(&o)).expect("json report")
    };
    let lattice = run("algorithm = 'lattice'", "lattice.sqlite");
    run(
        "algorithm = 'hybrid', p = 0, leftovers = 'suppress'",
        "zero.sqlite",
    );
    let bytes = |name: &str| std::fs::read(dir.path().join(name)).expect(name);
    assert!(
        bytes("zero.sqlite") == bytes("lattice.sqlite"),
        "hybrid at p = 0 differs from the lattice"
    );
    let hybrid = run("algorithm = 'hybrid', p = 1", "hybrid.sqlite");
    let suppressed = |r: &serde_json::Value| r["suppressed_entities"].as_u64().expect("a count");
    assert!(
        suppressed(&hybrid) < suppressed(&lattice),
        "hybrid {hybrid}\nlattice {lattice}"
    );
    let r = &hybrid["relocation"];
    assert!(
        r["relocated_cells"].as_u64() <= r["budget_cells"].as_u64()
            && r["relocated_entities"].as_u64() > Some(0),
        "{r}"
    );
    assert!(hybrid["smallest_ec"].as_u64() >= Some(3), "{hybrid}");
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "hybrid.sqlite");
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("PASS relocation budget"),
        "{}",
        stdout(&v)
    );
    declare("algorithm = 'hybrid', p = 0.5");
    let v = verify_with_key_map(dir.path(), &d, "uni.sqlite", "hybrid.sqlite");
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("more than the declared budget"),
        "{}",
        stdout(&v)
    );
}
