//! Property: any random snowflake warehouse (1-4 tables in a random tree, several children per
//! table, random fan-out, random QI and sensitive values; tables named with spaces, mixed case,
//! a reserved word, a quote and a non-ASCII letter; child tables keyed by their own id, by a
//! composite key whose data part is a QI, or by their parent's key (a 1:1 child); rows whose
//! FK is NULL; second paths from a grandchild table to the entity, naming the entity of a row
//! whose FK is NULL or nothing), anonymized by any algorithm (MiRaCle, MiRaCleX, the lattice
//! with a random suppression budget, hybrid with a random budget of untruthful cells, variant
//! and (on entity trees) leftovers' embedding, the shape-only reference, or a bitmap baseline for a
//! random k, the first two by key or by shape at a random suppression price and with a random
//! budget for relocation instead of suppression; ClusTree or
//! CToff with either mapping, order and price, or dMiRaCle, for a random l), passes the
//! independent verifier — both the self-check inside `anonymize` and a standalone `verify` —
//! and, held to a `KEEP` floor, keeps it or is refused; split into 1, 2 or 5 shards, still
//! passes it.
//! QI values hold spaces (leading, trailing, inner) and some ages are NULL.
//!
//! CI runs 64 cases; `scripts/soak.sh` runs 10,000 (`RELANON_WAREHOUSE_CASES`).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use relanon::pipeline::{anonymize, init, verify_release, Request};
use relanon::progress::Progress;

#[derive(Debug, Clone)]
struct Warehouse {
    /// parent[i] for tables 1..; table 0 is the entity table.
    parents: Vec<usize>,
    /// Children per parent row, per table (cycled through as rows are made).
    fanout: Vec<u8>,
    /// How each table is keyed: 0 its own id, 1 (FK to the parent, a sequence number), 2 the
    /// FK to the parent (a shared primary key: at most one row per parent). Table 0: its id.
    keys: Vec<u8>,
    /// Whether a table keyed by its own id also holds a row whose FK is NULL.
    null_fk: Vec<bool>,
    /// Whether a table below a child of the entity table also references the entity table
    /// directly (a second path; a row whose FK is NULL then hangs at its entity).
    shortcut: Vec<bool>,
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
                prop::collection::vec(0u8..=2, tables),
                prop::collection::vec(prop::bool::ANY, tables),
                prop::collection::vec(prop::bool::ANY, tables),
                1..=entities.min(5),
            )
                .prop_map(move |(parents, fanout, keys, null_fk, shortcut, k)| {
                    Warehouse {
                        parents,
                        fanout,
                        keys,
                        null_fk,
                        shortcut,
                        entities,
                        k,
                        algorithm,
                        mapping: if lsap { "lsap" } else { "grd" },
                        threshold,
                        seed,
                    }
                })
        })
}

/// Every algorithm whose releases must pass verify (the universal and per-table baselines
/// are meant to fail it: tests/integration/baselines.rs).
const ALGORITHMS: [&str; 11] = [
    "miracle",
    "miraclex",
    "shape-only",
    "lattice",
    // On the entity table alone, a budget p and a variant drawn from the seed.
    "hybrid",
    // The lattice under distinct l-diversity, the entity table's column the only sensitive one.
    "lattice-l",
    "clustree",
    "ctoff",
    "dmiracle",
    "bitmap-complete",
    "bitmap-incomplete",
];

/// The number of cases: `var` if set (the soak script), else `default` (CI).
pub fn cases(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn diverse(algorithm: &str) -> bool {
    matches!(algorithm, "clustree" | "ctoff" | "dmiracle" | "lattice-l")
}

/// QI values as real data has them: a trailing, a leading and an inner space are part of
/// the value (hierarchies match byte for byte).
const LETTERS: [&str; 8] = ["a", "b ", " c", "d d", "e", "f", "g", "h"];

/// Table names a real schema may have: mixed case, a space, a reserved word, a quote and a
/// non-ASCII letter (distinct ignoring case).
const NAMES: [&str; 4] = ["Person", "Order Lines", "select", "Tëst \"q\""];

fn q(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

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
    // Per table: its key columns, and each row's key values (None: the row's FK is NULL).
    let mut key_cols: Vec<Vec<String>> = Vec::with_capacity(tables);
    let mut rows: Vec<Vec<Option<Vec<i64>>>> = vec![Vec::new(); tables];
    // Per table, each row's entity (None: it belongs to nobody).
    let mut owners: Vec<Vec<Option<i64>>> = vec![Vec::new(); tables];
    let mut id = 1000;
    for t in 0..tables {
        let name = q(NAMES[t]);
        let kind = if t == 0 { 0 } else { w.keys[t] };
        let (refs, mut cols) = if t == 0 {
            (Vec::new(), vec!["\"Id\" INTEGER".to_string()])
        } else {
            let p = w.parents[t - 1];
            let refs: Vec<String> = (0..key_cols[p].len()).map(|j| format!("Ref {j}")).collect();
            let cols = refs.iter().map(|r| format!("{} INTEGER", q(r))).collect();
            (refs, cols)
        };
        let own: Vec<String> = match kind {
            0 => vec!["Id".to_string()],
            1 => refs.iter().cloned().chain(["Seq".to_string()]).collect(),
            _ => refs.clone(),
        };
        if kind == 0 && t > 0 {
            cols.push("\"Id\" INTEGER".to_string());
        }
        if kind == 1 {
            cols.push("\"Seq\" INTEGER".to_string());
        }
        let shortcut = t > 0 && w.parents[t - 1] != 0 && w.shortcut[t];
        if shortcut {
            cols.push("\"Owner\" INTEGER".to_string());
        }
        cols.extend(["\"Q\" TEXT", "\"Age\" INTEGER", "\"S\" INTEGER"].map(String::from));
        let list = |c: &[String]| c.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
        let mut ddl = format!(
            "CREATE TABLE {name} ({}, PRIMARY KEY ({})",
            cols.join(", "),
            list(&own)
        );
        if t > 0 {
            let p = w.parents[t - 1];
            ddl += &format!(
                ", FOREIGN KEY ({}) REFERENCES {} ({})",
                list(&refs),
                q(NAMES[p]),
                list(&key_cols[p])
            );
        }
        if shortcut {
            ddl += &format!(
                ", FOREIGN KEY (\"Owner\") REFERENCES {} (\"Id\")",
                q(NAMES[0])
            );
        }
        ddl += ");";
        db.execute_batch(&ddl).expect("create");
        let (parents, parent_owners): (Vec<Option<Vec<i64>>>, Vec<Option<i64>>) = if t == 0 {
            (
                (0..w.entities).map(|_| Some(Vec::new())).collect(),
                vec![None; w.entities],
            )
        } else {
            let pt = w.parents[t - 1];
            let mut p = rows[pt].clone();
            let mut o = owners[pt].clone();
            // A row whose FK is NULL belongs to nobody (only where the FK is not the key),
            // unless a second path names its entity.
            if kind == 0 && w.null_fk[t] {
                p.push(None);
                o.push(None);
            }
            (p, o)
        };
        for (i, (p, parent_owner)) in parents.iter().zip(&parent_owners).enumerate() {
            let mut n = if t == 0 {
                1
            } else {
                (w.fanout[t] as usize + i) % (w.fanout[t] as usize + 1)
            };
            if kind == 2 || (p.is_none() && t > 0) {
                n = n.min(1);
            }
            for seq in 0..n {
                id += 1;
                let letter = LETTERS[(next() % 8) as usize];
                // Now and then an age is missing: NULL is a leaf of its own.
                let age = match next() % 16 {
                    0 => None,
                    r => Some(18 + (r * 7 + next() % 7) as i64 % 60),
                };
                let s = (next() % 5) as i64;
                let mut values: Vec<rusqlite::types::Value> = Vec::new();
                let mut names: Vec<String> = Vec::new();
                if let Some(p) = p.as_ref().filter(|_| t > 0) {
                    for (j, v) in p.iter().enumerate() {
                        names.push(format!("Ref {j}"));
                        values.push((*v).into());
                    }
                }
                let key: Option<Vec<i64>> = match (kind, p) {
                    (0, _) => {
                        names.push("Id".to_string());
                        values.push(id.into());
                        // A row under a NULL FK still has its own key (children may hang
                        // under it, and are left out with it).
                        Some(vec![id])
                    }
                    (1, Some(p)) => {
                        names.push("Seq".to_string());
                        values.push((seq as i64 + 1).into());
                        Some(p.iter().copied().chain([seq as i64 + 1]).collect())
                    }
                    (_, p) => p.clone(),
                };
                let owner = match (t, p) {
                    (0, _) => Some(id),
                    (_, Some(_)) => *parent_owner,
                    // Under a NULL FK: the second path names some entity, or nothing.
                    (_, None) if shortcut && next() % 4 != 0 => rows[0]
                        [(next() % rows[0].len() as u64) as usize]
                        .as_ref()
                        .map(|k| k[0]),
                    (_, None) => None,
                };
                if shortcut {
                    names.push("Owner".to_string());
                    values.push(owner.into());
                }
                names.extend(["Q", "Age", "S"].map(String::from));
                values.push(letter.to_string().into());
                values.push(age.into());
                values.push(s.into());
                let marks = (1..=values.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                db.execute(
                    &format!("INSERT INTO {name} ({}) VALUES ({marks})", list(&names)),
                    rusqlite::params_from_iter(values),
                )
                .expect("insert");
                rows[t].push(key);
                owners[t].push(owner);
            }
        }
        key_cols.push(own);
    }
    let mut text = String::from(
        "SET source = 'w.sqlite';\nSET target = 'r.sqlite';\n\
         CREATE HIERARCHY letters AS VALUES ('a','ab','abcd'), ('b ','ab','abcd'), (' c','cd','abcd'), ('d d','cd','abcd'), \
         ('e','ef','efgh'), ('f','ef','efgh'), ('g','gh','efgh'), ('h','gh','efgh');\n\
         CREATE HIERARCHY age AS BANDS (5, 10, 20);\nCREATE HIERARCHY seq AS BANDS (2, 4);\n",
    );
    text += &format!("CREATE ENTITY person ON {} (\"Id\");\n", q(NAMES[0]));
    for (t, name) in NAMES.iter().enumerate().take(tables) {
        let n = q(name);
        // One table's sensitive column is continuous: buckets merge its values in pairs.
        let buckets = if t == 1 { " BUCKETS (0, 2, 4, 6)" } else { "" };
        let sensitive = if w.algorithm == "lattice-l" && t > 0 {
            "INSENSITIVE".to_string()
        } else {
            format!("SENSITIVE{buckets}")
        };
        text += &format!("LABEL COLUMN {n}.\"Q\" AS QUASI IDENTIFIER USING letters;\nLABEL COLUMN {n}.\"S\" AS {sensitive};\n");
        text += &if t == 0 {
            format!("LABEL COLUMN {n}.\"Age\" AS QUASI IDENTIFIER USING age;\n")
        } else {
            format!("LABEL COLUMN {n}.\"Age\" AS INSENSITIVE;\n")
        };
        if t > 0 && w.keys[t] == 1 {
            // The data part of a composite key: a QI like any other.
            text += &format!("LABEL COLUMN {n}.\"Seq\" AS QUASI IDENTIFIER USING seq;\n");
        }
    }
    let model = if w.algorithm == "lattice-l" {
        format!("model = 'l-diversity', diversity = 'distinct', l = {}", w.k)
    } else if diverse(w.algorithm) {
        format!("model = 'l-diversity', l = {}", w.k)
    } else {
        format!("k = {}", w.k)
    };
    // Each algorithm takes its own options: ClusTree's pairing and step, CDGH's threshold;
    // the four shape-aware ones an order and a suppression price drawn from the seed.
    let shaped = format!(
        "order = '{}', suppression_price = {}",
        if w.seed.is_multiple_of(2) {
            "shape"
        } else {
            "key"
        },
        [0.5, 1.0, 4.0][(w.seed / 2 % 3) as usize]
    );
    let options = if matches!(w.algorithm, "clustree" | "ctoff") {
        format!("mapping = '{}', s = 1, {shaped}", w.mapping)
    } else if w.algorithm.starts_with("lattice") {
        // Any share: the budget is the test's, what is released must verify.
        format!("max_suppression = {}", w.threshold)
    } else if w.algorithm == "hybrid" {
        // p of 0, 3 or 10 percent, any variant, now and then some suppression; on trees
        // (whose shapes may be unique) any share, and the leftovers embedded or suppressed.
        // The statistical variants on one table only (refused on trees).
        let trees = !w.parents.is_empty();
        let variants = ["deterministic", "randomized", "statistical", "rstat"];
        let variant = variants[(w.seed / 2 % if trees { 2 } else { 4 }) as usize];
        let leftovers = if trees && !matches!(variant, "statistical" | "rstat") {
            [", leftovers = 'embed'", ", leftovers = 'suppress'", ""][(w.seed / 8 % 3) as usize]
        } else {
            ""
        };
        let share = match (trees, w.seed % 8) {
            (true, _) => [0.0, 0.5, 1.0][(w.seed / 3 % 3) as usize],
            (false, 1) => 0.2,
            (false, _) => 0.0,
        };
        format!(
            "p = {}, relocation = '{variant}', max_suppression = {share}{leftovers}",
            10.0 * w.threshold,
        )
    } else if w.algorithm == "shape-only" {
        String::new()
    } else if matches!(w.algorithm, "miracle" | "miraclex") {
        // Relocation instead of suppression now and then: none, 1% or 10% of the QI cells.
        format!(
            "threshold = {}, {shaped}, relocate = {}",
            w.threshold,
            [0.0, 1.0, 10.0][(w.seed / 5 % 3) as usize]
        )
    } else {
        format!("threshold = {}", w.threshold)
    };
    let options = if options.is_empty() {
        options
    } else {
        format!("{options}, ")
    };
    text += &format!(
        "ANONYMIZE person WITH ({model}, algorithm = '{}', {options}seed = 7, queries = 10);\n",
        w.algorithm.trim_end_matches("-l")
    );
    text
}

/// Anonymizes `w` (its first child table held to `KEEP 60 PERCENT` when `floor`, in `shards`
/// when given) and checks the release: the floor kept, classes of at least k, every entity
/// released or suppressed once, the shards recorded, and the independent verifier passing
/// inside `anonymize` and standalone. A refusal the data rules out passes: too few distinct
/// values for l, a lattice whose shapes alone exceed its budget, a floor no price reaches.
fn released_and_verified(
    w: &Warehouse,
    floor: bool,
    shards: Option<usize>,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = build(w, dir.path());
    if floor {
        text += &format!("KEEP 60 PERCENT OF {};\n", q(NAMES[1]));
    }
    let req = Request {
        text,
        base: dir.path().to_path_buf(),
        origin: "random.sql".into(),
        key_map: Some(dir.path().join("keys.json")),
        shards,
        ..Request::default()
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = match rt.block_on(anonymize(&req, &Progress::new())) {
        Ok(o) => o,
        Err(e) => {
            let e = format!("{e:#}");
            // The kernel's shape floor is checked against a brute force in its unit tests.
            let right = (diverse(w.algorithm) && e.contains("no entity can be released"))
                || (w.algorithm.starts_with("lattice")
                    && e.contains("even generalizing every column to '*' suppresses"))
                // Tree shapes no group shares may leave no node within the budgets.
                || (w.algorithm == "hybrid"
                    && !w.parents.is_empty()
                    && e.contains("no node of the lattice is"))
                || (floor && e.contains("the rows kept fall short of KEEP"));
            if right {
                return Ok(());
            }
            return Err(TestCaseError::fail(format!(
                "--shards {shards:?}: {e}\n{}",
                req.text
            )));
        }
    };
    let report = &outcome.report;
    if floor {
        let t = report
            .tables
            .iter()
            .find(|t| t.name == NAMES[1])
            .expect("the floored table");
        prop_assert!(
            t.released * 100 >= 60 * t.rows_in,
            "{} of {} kept under KEEP 60",
            t.released,
            t.rows_in
        );
    }
    prop_assert!(outcome.verdict.passed(), "{}", outcome.verdict.summary());
    let split = shards
        .filter(|_| !w.algorithm.starts_with("lattice") && w.algorithm != "hybrid")
        .unwrap_or(1);
    prop_assert_eq!(report.params.shards, split);
    prop_assert!(report.smallest_ec.unwrap_or(w.k) >= w.k);
    prop_assert_eq!(
        report.entities_released + report.suppressed_entities,
        w.entities
    );
    let verdict = rt
        .block_on(verify_release(
            &req,
            None,
            Some(&dir.path().join("keys.json")),
            &Progress::new(),
        ))
        .expect("verify runs");
    prop_assert!(
        verdict.passed(),
        "--shards {:?}: {}\n{}",
        shards,
        verdict.summary(),
        req.text
    );
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: cases("RELANON_WAREHOUSE_CASES", 64), rng_seed: RngSeed::Fixed(20261122), failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_snowflakes_always_pass_verify(w in warehouse()) {
        // A third of the warehouses with a child table hold it to a floor of 60% of its rows:
        // a release then keeps it, or the run is refused.
        let floor = !w.parents.is_empty() && (w.seed / 6) % 3 == 0;
        released_and_verified(&w, floor, None)?;
    }

    /// Shards: a random snowflake anonymized in 1, 2 or 5 shards of whole trees (as many as
    /// hold k entities each) passes the independent verifier, inside `anonymize` and
    /// standalone: the union of k-anonymous (l-diverse) shards is what verify accepts. A
    /// third are held to a floor, which every shard must then meet.
    #[test]
    fn sharded_snowflakes_always_pass_verify(
        w in warehouse(),
        shards in prop::sample::select(&[1usize, 2, 5][..]),
    ) {
        let n = shards.min(w.entities / w.k.max(1)).max(1);
        let floor = !w.parents.is_empty() && (w.seed / 6) % 3 == 1;
        released_and_verified(&w, floor, Some(n))?;
    }

    /// Anatomy (000 Ch. 3), both variants, with or without a rule on one value or on every
    /// value of a bucketed column, over any number of partitions: every release verifies,
    /// every group holds exactly l entities, every entity is grouped or suppressed once.
    #[test]
    fn anatomies_always_pass_verify(
        w in warehouse(),
        variant in prop::sample::select(&["t-t", "v-v"][..]),
        partitions in 1usize..=3,
        rule in 0u8..3,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let built = build(&w, dir.path());
        let l = w.k.max(2);
        let at = built.rfind("ANONYMIZE").expect("an ANONYMIZE line");
        let mut text = built[..at].to_string();
        match rule {
            1 => text += &format!("CREATE RULE one ON {}.\"S\" = 1 WITH (m = 1, p = 0.5);\n", q(NAMES[0])),
            // ("lattice-l" warehouses label child columns INSENSITIVE.)
            2 if !w.parents.is_empty() && w.algorithm != "lattice-l" => text += &format!("CREATE RULE every ON {}.\"S\" WITH (m = 2, p = '1/2');\n", q(NAMES[1])),
            _ => {}
        }
        text += &format!("ANONYMIZE person WITH (model = 'anatomy', variant = '{variant}', l = {l}, partitions = {partitions}, seed = 7, queries = 10);\n");
        let req = Request {
            text,
            base: dir.path().to_path_buf(),
            origin: "random.sql".into(),
            key_map: Some(dir.path().join("keys.json")),
            ..Request::default()
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let outcome = match rt.block_on(anonymize(&req, &Progress::new())) {
            Ok(o) => o,
            // What the data rules out (too few values for l, no group formed) and a table
            // split between two parents are refused with the reason: the right answer.
            Err(e) if ["distinct value(s)", "no group of l", "reached by two paths", "allow no group to hold"]
                .iter()
                .any(|why| format!("{e:#}").contains(why)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e:#}\n{}", req.text))),
        };
        prop_assert!(outcome.verdict.passed(), "{}", outcome.verdict.summary());
        for &size in outcome.report.ec_size_histogram.keys() {
            prop_assert_eq!(size, l);
        }
        prop_assert_eq!(outcome.report.entities_released + outcome.report.suppressed_entities, w.entities);
        let verdict = rt.block_on(verify_release(&req, None, Some(&dir.path().join("keys.json")), &Progress::new())).expect("verify runs");
        prop_assert!(verdict.passed(), "{}\n{}", verdict.summary(), req.text);
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
            .block_on(anonymize(&req, &Progress::new()))
            .map_err(|e| TestCaseError::fail(format!("{e:#}\n{}", req.text)))?;
        prop_assert_eq!(outcome.report.verified, outcome.verdict.passed());
        let verdict = rt.block_on(verify_release(&req, None, Some(&dir.path().join("keys.json")), &Progress::new())).expect("verify runs");
        for check in &verdict.checks {
            prop_assert!(check.name == "k-anonymity" || check.passed(), "{}", verdict.summary());
        }
    }

    /// What `init` proposes for any random snowflake, with the entity given or chosen by
    /// init, parses, plans, anonymizes and passes verify as written.
    #[test]
    fn init_proposals_always_run_and_verify(w in warehouse(), named in prop::bool::ANY) {
        let dir = tempfile::tempdir().expect("tempdir");
        build(&w, dir.path());
        let source = dir.path().join("w.sqlite");
        let out = dir.path().join("w.decl.sql");
        let options = relanon::init::Options {
            entity: named.then(|| NAMES[0].to_string()),
            k: 5,
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let made = rt
            .block_on(init(&source, &out, &options, &Default::default(), &Progress::new()))
            .map_err(|e| TestCaseError::fail(format!("init: {e:#}")))?;
        for (path, content) in &made.files {
            std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("mkdir");
            std::fs::write(path, content).expect("write hierarchy file");
        }
        std::fs::write(&out, &made.text).expect("write declarations");
        let req = Request {
            key_map: Some(dir.path().join("keys.json")),
            ..Request::from_file(&out).expect("read declarations")
        };
        let outcome = rt
            .block_on(anonymize(&req, &Progress::new()))
            .map_err(|e| TestCaseError::fail(format!("{e:#}\n{}", made.text)))?;
        prop_assert!(outcome.verdict.passed(), "{}", outcome.verdict.summary());
        let verdict = rt.block_on(verify_release(&req, None, Some(&dir.path().join("keys.json")), &Progress::new())).expect("verify runs");
        prop_assert!(verdict.passed(), "{}\n{}", verdict.summary(), made.text);
    }
}

/// Runs the binary's `verify` on the release in `dir` with `RELANON_VERIFY_PARTITIONS` (the
/// test hook that forces how many partitions verify checks in) set to `parts`.
fn verify_in_partitions(dir: &std::path::Path, parts: usize) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_relanon"))
        .current_dir(dir)
        .args(["verify", "random.sql", "--key-map", "keys.json"])
        .env("RELANON_VERIFY_PARTITIONS", parts.to_string())
        .output()
        .expect("the relanon binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

proptest! {
    #![proptest_config(Config { cases: cases("RELANON_WAREHOUSE_CASES", 24), rng_seed: RngSeed::Fixed(20261127), failure_persistence: None, ..Config::default() })]

    /// Verify checks a release in partitions with the verdict of the whole check: a random
    /// snowflake's release (the baselines' too, which break k-anonymity) verifies to the same
    /// text and exit code whole and in 3 partitions.
    #[test]
    fn partitions_give_the_whole_checks_verdict(
        w in warehouse(),
        baseline in prop::bool::ANY,
    ) {
        let w = if baseline { Warehouse { algorithm: "universal", ..w } } else { w };
        let dir = tempfile::tempdir().expect("tempdir");
        let text = build(&w, dir.path());
        std::fs::write(dir.path().join("random.sql"), &text).expect("write declarations");
        let req = Request {
            text,
            base: dir.path().to_path_buf(),
            origin: "random.sql".into(),
            key_map: Some(dir.path().join("keys.json")),
            allow_unverified: true,
            ..Request::default()
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        if rt.block_on(anonymize(&req, &Progress::new())).is_err() {
            // A refusal the data rules out: nothing was released to verify.
            return Ok(());
        }
        let whole = verify_in_partitions(dir.path(), 1);
        prop_assert!(whole.0 == Some(0) || whole.0 == Some(1), "{}", whole.2);
        let split = verify_in_partitions(dir.path(), 3);
        prop_assert_eq!(&split, &whole, "{}", req.text);
    }
}
