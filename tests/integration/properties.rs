//! Property: any random snowflake warehouse (1-4 tables in a random tree, random fan-out,
//! random QI and sensitive values), anonymized by any algorithm (MiRaCle, MiRaCleX or a
//! bitmap baseline for a random k; ClusTree or CToff with either mapping, or dMiRaCle, for a
//! random l), passes the independent verifier — both the self-check inside `anonymize` and a
//! standalone `verify`.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use relanon::pipeline::{anonymize, verify_release, Request};

#[derive(Debug, Clone)]
struct Warehouse {
    /// parent[i] for tables 1..; table 0 is the entity table.
    parents: Vec<usize>,
    /// Children per parent row, per table (cycled through as rows are made).
    fanout: Vec<u8>,
    entities: usize,
    /// k, or l for the l-diversity algorithms.
    k: usize,
    algorithm: &'static str,
    mapping: &'static str,
    threshold: f64,
    seed: u64,
}

fn warehouse() -> impl Strategy<Value = Warehouse> {
    (
        1usize..=4,
        2usize..=24,
        any::<u64>(),
        prop::sample::select(&ALGORITHMS[..]),
        prop_oneof![Just(0.0), Just(0.3), Just(1.0)],
        prop::bool::ANY,
    )
        .prop_flat_map(|(tables, entities, seed, algorithm, threshold, lsap)| {
            let parents = (1..tables).map(|i| 0..i).collect::<Vec<_>>();
            (
                parents,
                prop::collection::vec(0u8..=3, tables),
                1..=entities.min(5),
            )
                .prop_map(move |(parents, fanout, k)| Warehouse {
                    parents,
                    fanout,
                    entities,
                    k,
                    algorithm,
                    mapping: if lsap { "lsap" } else { "grd" },
                    threshold,
                    seed,
                })
        })
}

/// Every algorithm whose releases must pass verify (the universal and per-table baselines
/// are meant to fail it: tests/integration/baselines.rs).
const ALGORITHMS: [&str; 7] = [
    "miracle",
    "miraclex",
    "clustree",
    "ctoff",
    "dmiracle",
    "bitmap-complete",
    "bitmap-incomplete",
];

fn diverse(algorithm: &str) -> bool {
    matches!(algorithm, "clustree" | "ctoff" | "dmiracle")
}

const LETTERS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// Writes the warehouse as SQLite (with PK/FK constraints) and returns its declarations.
fn build(w: &Warehouse, dir: &std::path::Path) -> String {
    let db = rusqlite::Connection::open(dir.join("w.sqlite")).expect("create sqlite");
    let mut state = w.seed | 1;
    let mut next = move || {
        // xorshift: the generator is part of the property's seed.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let tables = w.parents.len() + 1;
    let mut rows: Vec<Vec<i64>> = vec![Vec::new(); tables];
    let mut id = 1000;
    for t in 0..tables {
        let fk = if t == 0 {
            String::new()
        } else {
            format!(", pid INTEGER REFERENCES t{}(id)", w.parents[t - 1])
        };
        db.execute_batch(&format!(
            "CREATE TABLE t{t} (id INTEGER PRIMARY KEY{fk}, q TEXT, age INTEGER, s INTEGER);"
        ))
        .expect("create");
        let parents: Vec<Option<i64>> = if t == 0 {
            (0..w.entities).map(|_| None).collect()
        } else {
            rows[w.parents[t - 1]].iter().map(|&p| Some(p)).collect()
        };
        for (i, p) in parents.iter().enumerate() {
            let n = if t == 0 {
                1
            } else {
                (w.fanout[t] as usize + i) % (w.fanout[t] as usize + 1)
            };
            for _ in 0..n {
                id += 1;
                let q = LETTERS[(next() % 8) as usize];
                let age = 18 + (next() % 60) as i64;
                let s = (next() % 5) as i64;
                match p {
                    None => db.execute(
                        &format!("INSERT INTO t{t} (id, q, age, s) VALUES (?1, ?2, ?3, ?4)"),
                        rusqlite::params![id, q, age, s],
                    ),
                    Some(p) => db.execute(
                        &format!(
                            "INSERT INTO t{t} (id, pid, q, age, s) VALUES (?1, ?2, ?3, ?4, ?5)"
                        ),
                        rusqlite::params![id, p, q, age, s],
                    ),
                }
                .expect("insert");
                rows[t].push(id);
            }
        }
    }
    let mut text = String::from(
        "SET source = 'w.sqlite';\nSET target = 'r.sqlite';\n\
         CREATE HIERARCHY letters AS VALUES ('a','ab','abcd'), ('b','ab','abcd'), ('c','cd','abcd'), ('d','cd','abcd'), \
         ('e','ef','efgh'), ('f','ef','efgh'), ('g','gh','efgh'), ('h','gh','efgh');\n\
         CREATE HIERARCHY age AS BANDS (5, 10, 20);\nCREATE ENTITY person ON t0 (id);\n",
    );
    for t in 0..tables {
        // One table's sensitive column is continuous: buckets merge its values in pairs.
        let buckets = if t == 1 { " BUCKETS (0, 2, 4, 6)" } else { "" };
        text += &format!("LABEL COLUMN t{t}.q AS QUASI IDENTIFIER USING letters;\nLABEL COLUMN t{t}.s AS SENSITIVE{buckets};\n");
        text += &if t == 0 {
            format!("LABEL COLUMN t{t}.age AS QUASI IDENTIFIER USING age;\n")
        } else {
            format!("LABEL COLUMN t{t}.age AS INSENSITIVE;\n")
        };
    }
    let model = if diverse(w.algorithm) {
        format!(
            "model = 'l-diversity', l = {}, mapping = '{}', s = 1",
            w.k, w.mapping
        )
    } else {
        format!("k = {}", w.k)
    };
    text += &format!(
        "ANONYMIZE person WITH ({model}, algorithm = '{}', threshold = {}, seed = 7, queries = 10);\n",
        w.algorithm, w.threshold
    );
    text
}

proptest! {
    #![proptest_config(Config { cases: 40, rng_seed: RngSeed::Fixed(20261122), failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_snowflakes_always_pass_verify(w in warehouse()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = build(&w, dir.path());
        let req = Request {
            text,
            base: dir.path().to_path_buf(),
            origin: "random.sql".into(),
            key_map: Some(dir.path().join("keys.json")),
            ..Request::default()
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let outcome = rt.block_on(anonymize(&req));
        let outcome = match outcome {
            Ok(o) => o,
            // Too few distinct entity values for l: refusing is the right answer.
            Err(e) if diverse(w.algorithm) && format!("{e:#}").contains("no entity can be released") => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e:#}\n{}", req.text))),
        };
        prop_assert!(outcome.report.smallest_ec.unwrap_or(w.k) >= w.k);
        prop_assert_eq!(outcome.report.entities_released + outcome.report.suppressed_entities, w.entities);
        let verdict = rt.block_on(verify_release(&req, None, Some(&dir.path().join("keys.json")))).expect("verify runs");
        prop_assert!(verdict.passed(), "{}", verdict.summary());
    }

    /// The universal and per-table baselines are not k-anonymous, but what they publish must
    /// still be a release: truthful, key-atomic, counted and in the source's schema.
    #[test]
    fn single_table_baselines_only_ever_fail_k_anonymity(
        w in warehouse(),
        algorithm in prop::sample::select(&["universal", "per-table"][..]),
    ) {
        let w = Warehouse { algorithm, ..w };
        let dir = tempfile::tempdir().expect("tempdir");
        let req = Request {
            text: build(&w, dir.path()),
            base: dir.path().to_path_buf(),
            origin: "random.sql".into(),
            key_map: Some(dir.path().join("keys.json")),
            allow_unverified: true,
            ..Request::default()
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let outcome = rt
            .block_on(anonymize(&req))
            .map_err(|e| TestCaseError::fail(format!("{e:#}\n{}", req.text)))?;
        prop_assert_eq!(outcome.report.verified, outcome.verdict.passed());
        let verdict = rt.block_on(verify_release(&req, None, Some(&dir.path().join("keys.json")))).expect("verify runs");
        for check in &verdict.checks {
            prop_assert!(check.name == "k-anonymity" || check.passed(), "{}", verdict.summary());
        }
    }
}
