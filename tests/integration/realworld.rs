//! Warehouses shaped like the public sample databases people really have (fixtures/realworld):
//! a sales database with PascalCase and spaced names, composite order lines and an employees
//! dimension; a rental database with two agreeing FK paths, a disagreeing variant and NULL
//! FKs; a university with composite enrolments, a shared-key 1:1 child and a
//! self-referencing FK; a clinic whose notes reference a visit by a composite key that shares a
//! column with their FK to the person; values with leading and trailing spaces. Each runs anonymize ->
//! verify -> attack as written, from SQLite and from a Parquet copy whose keys are declared.

use std::path::{Path, PathBuf};

use relanon::warehouse::{write_staged, ReleaseSet, ReleaseTable, Warehouse};

use crate::common::*;

const K: u64 = 5;

/// A Parquet copy of `dir/<name>.sqlite` in `dir/<name>-parquet/`, and declarations that read
/// it: the SQLite ones with source and target pointed at Parquet and every catalog key
/// declared with ALTER TABLE (Parquet carries none), before the file's own statements.
fn parquet_twin(dir: &Path, name: &str, decl: &Path) -> PathBuf {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let keys = rt.block_on(async {
        let wh = Warehouse::open(&dir.join(format!("{name}.sqlite")))
            .await
            .expect("open SQLite fixture");
        let mut tables = Vec::new();
        let mut keys = String::new();
        let q = relanon::warehouse::quote_ident;
        let list = |cols: &[String]| cols.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
        for t in &wh.tables {
            let batch = wh.read_table(&t.name, None, &[]).await.expect("read");
            tables.push(ReleaseTable {
                name: t.name.clone(),
                batch,
                primary_key: Vec::new(),
                foreign_keys: Vec::new(),
            });
            if !t.primary_key.is_empty() {
                keys += &format!(
                    "ALTER TABLE {} ADD PRIMARY KEY ({});\n",
                    q(&t.name),
                    list(&t.primary_key)
                );
            }
        }
        for t in &wh.tables {
            for fk in &t.foreign_keys {
                keys += &format!(
                    "ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {} ({});\n",
                    q(&t.name),
                    list(&fk.columns),
                    q(&fk.ref_table),
                    list(&fk.ref_columns)
                );
            }
        }
        let set = ReleaseSet {
            tables,
            views: Vec::new(),
        };
        write_staged(&dir.join(format!("{name}-parquet")), &set, true)
            .expect("stage Parquet copy")
            .commit()
            .expect("commit Parquet copy");
        keys
    });
    let text = std::fs::read_to_string(decl).expect("read declarations");
    let mut out = keys;
    for line in text.lines() {
        let l = line.trim_start().to_ascii_lowercase();
        if l.starts_with("set source") {
            out += &format!("SET source = '{name}-parquet';\n");
        } else if l.starts_with("set target") {
            out += &format!("SET target = '{name}-parquet-release';\n");
        } else {
            out += line;
            out.push('\n');
        }
    }
    let path = dir.join(format!("{name}-parquet.decl.sql"));
    std::fs::write(&path, out).expect("write Parquet declarations");
    path
}

/// anonymize (with a key map) and a standalone verify; returns report.json.
fn release(dir: &Path, decl: &Path) -> serde_json::Value {
    let decl = decl.to_str().expect("UTF-8 path");
    let o = relanon(
        dir,
        &[
            "anonymize",
            decl,
            "--json",
            "--key-map",
            "keys.json",
            "--overwrite",
        ],
    );
    assert!(o.status.success(), "anonymize {decl}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json report");
    assert_eq!(report["verified"], true, "{report}");
    assert!(report["smallest_ec"].as_u64().expect("smallest_ec") >= K);
    let v = relanon(dir, &["verify", decl, "--key-map", "keys.json"]);
    assert!(
        v.status.success(),
        "standalone verify of {decl}: {}{}",
        stdout(&v),
        stderr(&v)
    );
    report
}

/// How many released entities fit `facts`, by `relanon attack --json`.
fn candidates(dir: &Path, decl: &Path, facts: &[String]) -> u64 {
    let mut args = vec![
        "attack".to_string(),
        decl.to_str().expect("UTF-8 path").to_string(),
        "--json".to_string(),
    ];
    for f in facts {
        args.push("--fact".to_string());
        args.push(f.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = relanon(dir, &args);
    assert!(o.status.success(), "attack {facts:?}: {}", stderr(&o));
    let found: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json findings");
    found["candidates"].as_u64().expect("candidates")
}

fn table_report<'r>(report: &'r serde_json::Value, name: &str) -> &'r serde_json::Value {
    report["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no table {name} in {report}"))
}

/// Runs `sql` (one statement or several) on the SQLite file `db`.
fn exec(db: &Path, sql: &str) {
    let c = rusqlite::Connection::open(db).expect("open SQLite file");
    c.execute_batch(sql).expect("run SQL");
}

fn query(db: &Path, sql: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(db).expect("open release");
    let mut st = c.prepare(sql).expect("prepare");
    st.query_map([], |r| r.get::<_, rusqlite::types::Value>(0))
        .expect("query")
        .map(|v| match v.expect("row") {
            rusqlite::types::Value::Null => "NULL".to_string(),
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Real(f) => f.to_string(),
            rusqlite::types::Value::Text(t) => t,
            rusqlite::types::Value::Blob(_) => "<blob>".to_string(),
        })
        .collect()
}

#[test]
fn sales_with_spaced_names_composite_lines_and_an_employees_dimension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "sales", "sales", &[]);
    let report = release(dir.path(), &decl);
    let db = dir.path().join("sales-release.sqlite");
    let tables = query(
        &db,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    );
    assert_eq!(
        tables,
        [
            "Categories",
            "Customers",
            "Employees",
            "Order Details",
            "Orders",
            "Products"
        ],
        "Shippers is left out"
    );
    assert_eq!(report["left_out"], serde_json::json!(["Shippers"]));
    // The lines are keyed by a surrogate; their product is a generalized QI, not a key.
    let columns = query(
        &db,
        "SELECT name FROM pragma_table_info('Order Details') ORDER BY cid",
    );
    assert_eq!(
        columns,
        [
            "Order Details_key",
            "OrderID",
            "ProductID",
            "UnitPrice",
            "Quantity",
            "Discount"
        ]
    );
    // A product is released as itself or generalized up its hierarchy (category, `*`); the
    // default visits customers by tree shape, and their lines match without generalizing.
    let products = query(&db, "SELECT DISTINCT \"ProductID\" FROM \"Order Details\"");
    let categories = query(&db, "SELECT \"CategoryName\" FROM \"Categories\"");
    for p in &products {
        assert!(
            p.parse::<u32>().is_ok() || categories.contains(p) || p == "*",
            "{p} is neither a product, a category nor *"
        );
    }
    let lines = report["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "Order Details"))
        .expect("the report lists the lines");
    let (kept, rows) = (lines["released"].as_u64(), lines["rows_in"].as_u64());
    assert!(
        kept.zip(rows)
            .is_some_and(|(kept, rows)| kept * 100 >= rows * 85),
        "the default keeps at least 85% of the lines: {lines}"
    );
    // The employees dimension keeps no personal column; its FK from Orders is declared.
    let employee_columns = query(&db, "SELECT name FROM pragma_table_info('Employees')");
    assert_eq!(employee_columns, ["EmployeeID", "Title", "ReportsTo"]);
    let fks = query(
        &db,
        "SELECT \"table\" FROM pragma_foreign_key_list('Orders') ORDER BY \"table\"",
    );
    assert_eq!(fks, ["Customers", "Employees"]);
    // The rewritten view runs on the release.
    let countries = query(&db, "SELECT COUNT(*) FROM \"sales by country\"");
    assert_ne!(countries, ["0"]);
    let lines = table_report(&report, "Order Details");
    assert_eq!(
        lines["unchanged_columns"],
        serde_json::json!(["UnitPrice", "Quantity", "Discount"])
    );

    // An adversary who knows two products and the (spaced) city of a customer.
    let facts = [
        "\"Order Details\".\"ProductID\" = 5".to_string(),
        "\"Order Details\".\"ProductID\" = 7".to_string(),
        "\"Customers\".\"City\" = 'London '".to_string(),
    ];
    let n = candidates(dir.path(), &decl, &facts);
    assert!(n == 0 || n >= K, "{n} candidates");

    let parquet = parquet_twin(dir.path(), "sales", &decl);
    let report = release(dir.path(), &parquet);
    assert_eq!(
        table_report(&report, "Order Details")["rows_in"],
        serde_json::json!(750)
    );
}

#[test]
fn university_with_composite_enrolments_a_shared_key_child_and_a_self_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "university", "university", &[]);
    release(dir.path(), &decl);
    let db = dir.path().join("university-release.sqlite");
    // The 1:1 advisor row is keyed by its student's pseudonym: every one joins.
    let unjoined = query(
        &db,
        "SELECT COUNT(*) FROM advisor a LEFT JOIN student s ON s.\"ID\" = a.\"s_ID\" WHERE s.\"ID\" IS NULL",
    );
    assert_eq!(unjoined, ["0"]);
    let columns = query(&db, "SELECT name FROM pragma_table_info('student')");
    assert!(
        !columns.iter().any(|c| c == "mentor ID" || c == "name"),
        "{columns:?}"
    );
    assert_eq!(
        query(&db, "SELECT name FROM pragma_table_info('takes') LIMIT 1"),
        ["takes_key"]
    );

    // Facts on four sections the first student with four enrolments took: every column of
    // each fact is part of the enrolments' composite key.
    let src = rusqlite::Connection::open(dir.path().join("university.sqlite")).expect("open");
    let mut st = src
        .prepare(
            "SELECT course_id, sec_id, semester, year FROM takes WHERE \"ID\" = (SELECT \"ID\" FROM takes GROUP BY \"ID\" HAVING COUNT(*) >= 4 ORDER BY \"ID\" LIMIT 1) ORDER BY course_id LIMIT 4",
        )
        .expect("prepare");
    let facts: Vec<String> = st
        .query_map([], |r| {
            Ok(format!(
                "takes.course_id = '{}' AND takes.sec_id = '{}' AND takes.semester = '{}' AND takes.year = {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?
            ))
        })
        .expect("query")
        .map(|f| f.expect("row"))
        .collect();
    assert_eq!(facts.len(), 4);
    let n = candidates(dir.path(), &decl, &facts);
    assert!(n >= K, "{n} candidates for {facts:?}");

    let parquet = parquet_twin(dir.path(), "university", &decl);
    release(dir.path(), &parquet);
}

#[test]
fn rental_with_a_path_set_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let report = release(dir.path(), &decl);
    assert_eq!(report["left_out"], serde_json::json!(["address", "staff"]));
    let facts = ["customer.create_date = '2006-02-14'".to_string()];
    let n = candidates(dir.path(), &decl, &facts);
    assert!(n == 0 || n >= K, "{n} candidates");
    let parquet = parquet_twin(dir.path(), "rental", &decl);
    release(dir.path(), &parquet);
}

/// The rental declarations without the DROP FOREIGN KEY: payment reaches the customer both
/// directly and through its rental.
fn two_paths(dir: &Path, extra: &[&str]) -> PathBuf {
    let decl = realworld_workspace(dir, "rental", "rental", extra);
    let text = std::fs::read_to_string(&decl).expect("read");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("DROP FOREIGN KEY") && !l.contains("payment.rental_id"))
        .collect();
    let path = dir.join("two-paths.decl.sql");
    std::fs::write(&path, kept.join("\n")).expect("write");
    path
}

#[test]
fn rental_with_two_agreeing_paths_and_null_fks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = two_paths(dir.path(), &[]);
    let report = release(dir.path(), &decl);
    let payment = table_report(&report, "payment");
    // The 6 payments without a rental hang at their customer (released or suppressed
    // there), not nowhere.
    assert_eq!(payment["rows_in"], 366, "{payment}");
    assert_eq!(
        payment["released"].as_u64().expect("released")
            + payment["suppressed"].as_u64().expect("suppressed"),
        366,
        "{payment}"
    );
    assert!(payment.get("no_parent").is_none(), "{payment}");
    let db = dir.path().join("rental-release.sqlite");
    let disagree = query(
        &db,
        "SELECT COUNT(*) FROM payment p JOIN rental r ON r.rental_id = p.rental_id WHERE r.customer_id <> p.customer_id",
    );
    assert_eq!(
        disagree,
        ["0"],
        "the second path is the same customer's pseudonym"
    );

    // A released second path moved to another customer is caught.
    exec(&db, "UPDATE payment SET customer_id = (SELECT MAX(customer_id) FROM customer) WHERE payment_id = (SELECT MIN(payment_id) FROM payment p JOIN rental r ON r.rental_id = p.rental_id WHERE r.customer_id <> (SELECT MAX(customer_id) FROM customer))");
    let v = relanon(
        dir.path(),
        &[
            "verify",
            decl.to_str().expect("UTF-8"),
            "--key-map",
            "keys.json",
        ],
    );
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("second path (customer_id)"),
        "{}",
        stdout(&v)
    );

    let parquet = parquet_twin(dir.path(), "rental", &decl);
    release(dir.path(), &parquet);
}

#[test]
fn rental_with_disagreeing_paths_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = two_paths(dir.path(), &["rental_disagree"]);
    let before = fingerprint(&dir.path().join("rental.sqlite"));
    let o = relanon(dir.path(), &["anonymize", decl.to_str().expect("UTF-8")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("3 row(s) reach customer through (customer_id)")
            && err.contains("payment_id = 7"),
        "{err}"
    );
    assert_eq!(before, fingerprint(&dir.path().join("rental.sqlite")));
    assert!(!dir.path().join("rental-release.sqlite").exists());
}

#[test]
fn values_with_surrounding_spaces_are_leaves_of_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "whitespace", "whitespace", &[]);
    release(dir.path(), &decl);
    let db = dir.path().join("whitespace-release.sqlite");
    let cities = query(&db, "SELECT DISTINCT city FROM people ORDER BY city");
    assert!(
        cities.iter().all(
            |c| [" Leeds", "Edinburgh ", "York", "North", "Scotland", "*"].contains(&c.as_str())
        ),
        "{cities:?}"
    );
    let facts = ["people.city = 'Edinburgh '".to_string()];
    let n = candidates(dir.path(), &decl, &facts);
    assert!(n >= K, "{n} candidates");
    let parquet = parquet_twin(dir.path(), "whitespace", &decl);
    release(dir.path(), &parquet);
    let n = candidates(dir.path(), &parquet, &facts);
    assert!(n >= K, "{n} candidates from the Parquet release");

    let bad = realworld_workspace(dir.path(), "whitespace", "whitespace_bad", &[]);
    let o = relanon(
        dir.path(),
        &["anonymize", bad.to_str().expect("UTF-8"), "--overwrite"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "\"Edinburgh \" differs from the leaf \"Edinburgh\" only by surrounding whitespace"
        ),
        "{err}"
    );
}

#[test]
fn preserved_keys_trace_surrogate_keyed_tables_by_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "university", "university", &[]);
    let text = std::fs::read_to_string(&decl).expect("read") + "\nSET keys = 'preserve';\n";
    std::fs::write(&decl, text).expect("write");
    let d = decl.to_str().expect("UTF-8");
    let o = relanon(dir.path(), &["anonymize", d, "--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = relanon(dir.path(), &["verify", d]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    // A course released under another department's label is not an ancestor of any course
    // its student took there: caught without a key map.
    let db = dir.path().join("university-release.sqlite");
    exec(&db, "UPDATE takes SET course_id = 'Music' WHERE takes_key = (SELECT MIN(takes_key) FROM takes WHERE course_id IN ('Comp. Sci.', 'CS-101', 'CS-190', 'CS-315'))");
    let v = relanon(dir.path(), &["verify", d]);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(stdout(&v).contains("FAIL truthfulness"), "{}", stdout(&v));
}

/// People keyed by their names (a composite key whose columns are IDENTIFIERs), visits
/// referencing both columns, and notes keyed by (visit, n) with a column named like the
/// aliases a query may use.
#[test]
fn an_entity_keyed_by_identifying_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = rusqlite::Connection::open(dir.path().join("c.sqlite")).expect("create");
    db.execute_batch(
        "CREATE TABLE person (first TEXT, last TEXT, town TEXT, PRIMARY KEY (first, last));
         CREATE TABLE visit (vid INTEGER PRIMARY KEY, first TEXT, last TEXT, place TEXT,
                             FOREIGN KEY (first, last) REFERENCES person (first, last));
         CREATE TABLE note (visit INTEGER REFERENCES visit (vid), n INTEGER, txt TEXT,
                            PRIMARY KEY (visit, n));
         WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30)
         INSERT INTO person SELECT 'F' || i, 'L' || (i % 7), CASE i % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END FROM s;
         WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60)
         INSERT INTO visit SELECT i, 'F' || (1 + i % 30), 'L' || ((1 + i % 30) % 7), CASE i % 2 WHEN 0 THEN 'p' ELSE 'q' END FROM s;
         WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60)
         INSERT INTO note SELECT i, 1, 'called at home' FROM s;",
    )
    .expect("fixture");
    drop(db);
    let decl = dir.path().join("c.decl.sql");
    std::fs::write(
        &decl,
        "SET source = 'c.sqlite';
         SET target = 'c-release.sqlite';
         CREATE HIERARCHY town_h AS VALUES ('a', 'ab'), ('b', 'ab'), ('c', 'c');
         CREATE HIERARCHY place_h AS VALUES ('p'), ('q');
         CREATE ENTITY person ON person (first, last);
         LABEL COLUMN person.first AS IDENTIFIER;
         LABEL COLUMN person.last AS IDENTIFIER;
         LABEL COLUMN person.town AS QUASI IDENTIFIER USING town_h;
         LABEL COLUMN visit.place AS QUASI IDENTIFIER USING place_h;
         LABEL COLUMN note.n AS INSENSITIVE;
         LABEL COLUMN note.txt AS IDENTIFIER;
         ANONYMIZE person WITH (k = 5);",
    )
    .expect("write");
    release(dir.path(), &decl);
    let db = dir.path().join("c-release.sqlite");
    assert_eq!(
        query(
            &db,
            "SELECT name FROM pragma_table_info('person') ORDER BY cid"
        ),
        ["person_key", "town"],
        "the names are left out; the people are keyed by a surrogate"
    );
    assert_eq!(
        query(
            &db,
            "SELECT name FROM pragma_table_info('visit') ORDER BY cid"
        ),
        ["vid", "person_key", "place"],
        "the two-column reference is one column"
    );
}

/// A third of the payments have no rental: they hang at their customer through the second
/// path, are released there with a NULL rental, and verify checks them like any row.
#[test]
fn rows_without_the_deeper_parent_hang_at_the_second_paths_ancestor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = two_paths(dir.path(), &[]);
    let source = dir.path().join("rental.sqlite");
    exec(
        &source,
        "UPDATE payment SET rental_id = NULL WHERE payment_id % 3 = 0",
    );
    let report = release(dir.path(), &decl);
    let payment = table_report(&report, "payment");
    assert_eq!(payment["rows_in"], 366, "{payment}");
    let db = dir.path().join("rental-release.sqlite");
    let hanging = query(&db, "SELECT COUNT(*) FROM payment WHERE rental_id IS NULL");
    let hanging: u64 = hanging[0].parse().expect("count");
    assert!(hanging > 50, "{hanging} payments released without a rental");
    let unjoined = query(
        &db,
        "SELECT COUNT(*) FROM payment p LEFT JOIN customer c ON c.customer_id = p.customer_id WHERE c.customer_id IS NULL",
    );
    assert_eq!(unjoined, ["0"], "each hangs at a released customer");
    let facts = ["payment.payment_date = '2005-05-25 11:30:37'".to_string()];
    let n = candidates(dir.path(), &decl, &facts);
    assert!(n == 0 || n >= K, "{n} candidates");
    // The split table is one table to the adversary: one posterior of its sensitive column,
    // over all its rows (those hanging at the customer too).
    let d = decl.to_str().expect("UTF-8");
    let o = relanon(
        dir.path(),
        &[
            "attack",
            d,
            "--json",
            "--fact",
            "customer.create_date >= '2000-01-01'",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let found: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json findings");
    let amounts: Vec<&serde_json::Value> = found["posteriors"]
        .as_array()
        .expect("posteriors")
        .iter()
        .filter(|p| p["column"] == "payment.amount")
        .collect();
    assert_eq!(amounts.len(), 1, "{found}");
    assert!(
        amounts[0]["entities"].as_u64().expect("entities") > 0,
        "{found}"
    );

    let tamper = |sql: &str| {
        let copy = dir.path().join("tampered.sqlite");
        std::fs::copy(&db, &copy).expect("copy");
        exec(&copy, sql);
        let v = relanon(
            dir.path(),
            &[
                "verify",
                d,
                "--key-map",
                "keys.json",
                "--release",
                "tampered.sqlite",
            ],
        );
        assert_eq!(v.status.code(), Some(1), "{sql}: {}", stdout(&v));
        stdout(&v)
    };
    // A hanging payment moved to another customer.
    let out = tamper(
        "UPDATE payment SET customer_id = (SELECT MIN(customer_id) FROM customer WHERE customer_id <> payment.customer_id) WHERE payment_id = (SELECT MIN(payment_id) FROM payment WHERE rental_id IS NULL)",
    );
    assert!(out.contains("FAIL truthfulness"), "{out}");
    // A hanging payment released under the key of a payment with a rental (SQLite would
    // refuse the duplicate: the table is copied without its key first, as a Parquet release
    // has none).
    let out = tamper(
        "CREATE TABLE copy AS SELECT * FROM payment; DROP TABLE payment; ALTER TABLE copy RENAME TO payment;
         UPDATE payment SET payment_id = (SELECT MIN(payment_id) FROM payment WHERE rental_id IS NOT NULL) WHERE payment_id = (SELECT MIN(payment_id) FROM payment WHERE rental_id IS NULL)",
    );
    assert!(out.contains("is released twice"), "{out}");
}

/// A self-reference or a set-aside FK published unchanged holds raw keys beside the
/// pseudonyms: anonymize says so (it is the data owner's label, so it is not refused).
#[test]
fn raw_keys_published_beside_pseudonyms_are_warned_about() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "university", "university", &[]);
    let text = std::fs::read_to_string(&decl).expect("read").replace(
        "LABEL COLUMN student.\"mentor ID\" AS IDENTIFIER;",
        "LABEL COLUMN student.\"mentor ID\" AS INSENSITIVE;",
    );
    std::fs::write(&decl, text).expect("write");
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("UTF-8"), "--overwrite"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "warning: student.(mentor ID) references student's keys and is published unchanged"
        ),
        "{}",
        stderr(&o)
    );

    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let text = std::fs::read_to_string(&decl).expect("read").replace(
        "LABEL COLUMN payment.rental_id    AS IDENTIFIER;",
        "LABEL COLUMN payment.rental_id    AS INSENSITIVE;",
    );
    assert!(
        text.contains("payment.rental_id    AS INSENSITIVE"),
        "{text}"
    );
    std::fs::write(&decl, text).expect("write");
    let o = relanon(
        dir.path(),
        &["anonymize", decl.to_str().expect("UTF-8"), "--overwrite"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("payment.(rental_id) references rental's keys"),
        "{}",
        stderr(&o)
    );
}

/// A note's composite FK to its visit shares the column `pid` with its FK to the person: the
/// release keeps `pid` as the person's pseudonym and the visit's surrogate key beside it, both
/// declared, from SQLite and from Parquet (notes that name no visit hang at the person, and
/// count among the table's rows).
#[test]
fn clinic_notes_share_a_column_between_a_composite_fk_and_a_second_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "clinic", "clinic", &[]);
    let report = release(dir.path(), &decl);
    let notes = table_report(&report, "Visit Notes");
    assert_eq!(notes["rows_in"], 134, "{notes}");
    let db = dir.path().join("clinic-release.sqlite");
    let schema = query(
        &db,
        "SELECT sql FROM sqlite_master WHERE name = 'Visit Notes'",
    );
    assert!(
        schema[0].contains("\"pid\" INTEGER, \"visits_key\" INTEGER")
            && schema[0]
                .contains("FOREIGN KEY (\"visits_key\") REFERENCES \"visits\" (\"visits_key\")")
            && schema[0].contains("FOREIGN KEY (\"pid\") REFERENCES \"persons\" (\"pid\")"),
        "{schema:?}"
    );
    // Both paths name the same person for every note that names a visit.
    let disagree = query(
        &db,
        "SELECT COUNT(*) FROM \"Visit Notes\" n JOIN visits v ON v.visits_key = n.visits_key WHERE v.pid <> n.pid",
    );
    assert_eq!(disagree, ["0"]);
    let n = candidates(dir.path(), &decl, &["visits.vno = 3".to_string()]);
    assert!(n == 0 || n >= K, "{n} candidates");
    let parquet = parquet_twin(dir.path(), "clinic", &decl);
    release(dir.path(), &parquet);
}

/// Hierarchies written the way a SQLite user writes them: `strftime` on dates stored as
/// text, `substr` of a code, `CASE` bands. They run in DataFusion over the SQLite source and
/// over its Parquet copy alike, and the release's labels are what the queries compute.
#[test]
fn hierarchies_in_sql_a_sqlite_user_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let text = std::fs::read_to_string(&decl).expect("read declarations");
    let text = text
        .replace(
            "CREATE HIERARCHY rented_h     AS DATE PARTS (month, year);",
            "CREATE HIERARCHY rented_h AS SELECT DISTINCT rental_date, strftime('%Y-%m', rental_date), strftime('%Y', rental_date) FROM rental;",
        )
        .replace(
            "CREATE HIERARCHY joined_h     AS DATE PARTS (quarter, year);",
            "CREATE HIERARCHY joined_h AS SELECT DISTINCT create_date, substr(create_date, 1, 4), CASE WHEN substr(create_date, 1, 4) < '2006' THEN 'before 2006' ELSE 'since 2006' END FROM customer;",
        );
    assert!(text.contains("strftime") && text.contains("CASE WHEN"));
    std::fs::write(&decl, text).expect("write declarations");
    release(dir.path(), &decl);
    let db = dir.path().join("rental-release.sqlite");
    let labels = query(&db, "SELECT DISTINCT rental_date FROM rental");
    assert!(
        labels
            .iter()
            .all(|l| l == "*" || l.len() == 4 || l.len() == 7 || l.len() == 19),
        "labels are dates, 'YYYY-MM', 'YYYY' or '*': {labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.len() == 7),
        "some month labels: {labels:?}"
    );
    let parquet = parquet_twin(dir.path(), "rental", &decl);
    release(dir.path(), &parquet);
}
