//! `relanon init` and `relanon plan` on the real-shaped fixtures: the proposal runs
//! unchanged to a verified release, its roles are the ones a data owner expects, `plan`
//! lists the review lines and warns about personal-looking values published unchanged; and
//! every bad input of the issue is one line, exit 2, nothing written.

use std::path::{Path, PathBuf};

use crate::common::{fingerprint, fixture, relanon, stderr, stdout};

/// Builds `<name>.sqlite` in `dir` from the fixture script.
fn source(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.sqlite"));
    let db = rusqlite::Connection::open(&path).expect("create");
    let text = std::fs::read_to_string(fixture(&format!("realworld/{name}.sql")))
        .expect("read fixture script");
    db.execute_batch(&text).expect("run fixture script");
    path
}

/// init, plan, anonymize (with a key map) and a standalone verify; returns the proposal.
fn round_trip(dir: &Path, name: &str, extra: &[&str]) -> String {
    let src = format!("{name}.sqlite");
    let decl = format!("{name}.decl.sql");
    let mut args = vec!["init", src.as_str()];
    args.extend_from_slice(extra);
    let o = relanon(dir, &args);
    assert!(o.status.success(), "init {name}: {}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("wrote {decl}")),
        "{}",
        stdout(&o)
    );
    let text = std::fs::read_to_string(dir.join(&decl)).expect("declarations written");
    let p = relanon(dir, &["plan", &decl]);
    assert!(p.status.success(), "plan {name}: {}", stderr(&p));
    let a = relanon(dir, &["anonymize", &decl, "--key-map", "keys.json"]);
    assert!(
        a.status.success(),
        "anonymize {name}: {}\n{text}",
        stderr(&a)
    );
    assert!(stdout(&a).contains("verify: passed"), "{}", stdout(&a));
    let v = relanon(dir, &["verify", &decl, "--key-map", "keys.json"]);
    assert!(
        v.status.success(),
        "verify {name}: {}{}",
        stdout(&v),
        stderr(&v)
    );
    text
}

fn line_of<'t>(text: &'t str, start: &str) -> &'t str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

#[test]
fn rental_proposal_runs_with_the_roles_an_owner_expects() {
    let dir = tempfile::tempdir().expect("tempdir");
    source(dir.path(), "rental");
    let text = round_trip(dir.path(), "rental", &[]);
    assert!(
        text.contains("CREATE ENTITY \"customer\" ON \"customer\" (\"customer_id\");"),
        "{text}"
    );
    for identifier in [
        "\"customer\".\"email\"",
        "\"customer\".\"first_name\"",
        "\"customer\".\"address_id\"",
        "\"rental\".\"staff_id\"",
    ] {
        assert!(
            line_of(&text, &format!("LABEL COLUMN {identifier} AS")).contains("AS IDENTIFIER;"),
            "{identifier}"
        );
    }
    let amount = line_of(&text, "LABEL COLUMN \"payment\".\"amount\"");
    assert!(amount.contains("AS SENSITIVE; -- review:"), "{amount}");
    let inventory = line_of(&text, "CREATE HIERARCHY \"rental.inventory_id\"");
    assert!(
        inventory.contains("AS SELECT") && inventory.contains("\"film\""),
        "{inventory}"
    );
    assert!(line_of(&text, "CREATE HIERARCHY \"rental.rental_date\"").contains("DATE PARTS"));
    // Personal dimension tables are left out, a film catalog is released.
    assert!(text.contains("LABEL TABLE \"film\" AS DIMENSION;"));
    assert!(!text.contains("LABEL TABLE \"address\" AS DIMENSION;"));
    assert!(!text.contains("LABEL TABLE \"staff\" AS DIMENSION;"));
}

#[test]
fn sales_university_and_clinic_proposals_run() {
    for name in ["sales", "university", "clinic", "whitespace"] {
        let dir = tempfile::tempdir().expect("tempdir");
        source(dir.path(), name);
        let text = round_trip(dir.path(), name, &[]);
        assert!(
            text.starts_with("-- Declarations proposed by relanon init."),
            "{name}"
        );
        // Every hierarchy file the declarations read was written beside them.
        for line in text.lines().filter(|l| l.contains("FROM CSV")) {
            let file = line.split('\'').nth(1).expect("a quoted path");
            assert!(dir.path().join(file).is_file(), "{name}: {file}");
        }
    }
}

/// A directory of CSV files with no keys at all: keys inferred from names and containment,
/// written as commented ALTER TABLE statements, and the proposal runs.
#[test]
fn csv_files_without_keys_get_inferred_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("shop");
    std::fs::create_dir(&data).expect("mkdir");
    let mut customers = String::from("customer_id,first_name,birth_year,city\n");
    let mut orders = String::from("order_id,customer_id,order_date,total\n");
    let cities = ["Oslo", "Bergen", "Trondheim"];
    for c in 1..=30 {
        customers.push_str(&format!("{c},Name{c},{},{}\n", 1950 + c, cities[c % 3]));
        for o in 0..(c % 3 + 1) {
            let id = c * 10 + o;
            orders.push_str(&format!("{id},{c},2024-0{}-1{o},{}.50\n", o + 1, c * 3 + o));
        }
    }
    std::fs::write(data.join("customers.csv"), customers).expect("write");
    std::fs::write(data.join("orders.csv"), orders).expect("write");
    let o = relanon(dir.path(), &["init", "shop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("shop.decl.sql")).expect("written");
    assert!(
        text.contains("ALTER TABLE \"customers\" ADD PRIMARY KEY (\"customer_id\"); -- inferred"),
        "{text}"
    );
    assert!(text.contains("ALTER TABLE \"orders\" ADD FOREIGN KEY (\"customer_id\") REFERENCES \"customers\" (\"customer_id\"); -- inferred"), "{text}");
    assert!(text.contains("SET target = 'shop-release';"), "{text}");
    let a = relanon(dir.path(), &["anonymize", "shop.decl.sql"]);
    assert!(a.status.success(), "{}\n{text}", stderr(&a));
}

#[test]
fn plan_lists_fates_review_lines_and_personal_values_published_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    source(dir.path(), "rental");
    let o = relanon(dir.path(), &["init", "rental.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let decl = dir.path().join("rental.decl.sql");
    let text = std::fs::read_to_string(&decl).expect("written");
    // The owner publishes the e-mail addresses by mistake.
    let text = text.replace(
        "LABEL COLUMN \"customer\".\"email\" AS IDENTIFIER;",
        "LABEL COLUMN \"customer\".\"email\" AS INSENSITIVE;",
    );
    std::fs::write(&decl, &text).expect("edit");
    let before = fingerprint(dir.path());
    let p = relanon(dir.path(), &["plan", "rental.decl.sql"]);
    assert!(p.status.success(), "{}", stderr(&p));
    let out = stdout(&p);
    assert!(
        out.contains("- email: published unchanged (INSENSITIVE)"),
        "{out}"
    );
    assert!(out.contains("warning: customer.email is published unchanged but its values look like e-mail addresses"), "{out}");
    // The SENSITIVE amount, and the model proposed to protect it.
    assert!(out.contains("still marked for review (2):"), "{out}");
    assert!(
        out.contains("-- review: 1 column(s) are proposed SENSITIVE (payment.amount)"),
        "{out}"
    );
    assert!(
        out.contains("\"payment\".\"amount\" AS SENSITIVE; -- review:"),
        "{out}"
    );
    assert!(
        out.contains("rental (360 rows, 3.0 per customer row on average, at most 5; at most 360 (100%) can be released)"),
        "{out}"
    );
    assert!(
        out.contains("generalized through rental.inventory_id (height 3, 20 leaves)"),
        "{out}"
    );
    assert!(out.contains("left out: address, staff"), "{out}");
    assert!(out.contains("algorithm miraclex: expect seconds"), "{out}");
    assert!(out.contains("the family in one run"), "{out}");
    let json = relanon(dir.path(), &["plan", "rental.decl.sql", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("json");
    assert_eq!(v["estimate"]["entities"], 120);
    // The budget's refusal, said by the plan as anonymize would say it.
    let small = relanon(
        dir.path(),
        &["plan", "rental.decl.sql", "--memory-budget", "1MiB"],
    );
    assert!(small.status.success(), "{}", stderr(&small));
    assert!(
        stdout(&small).contains("memory: refused: --memory-budget 1.0 MiB"),
        "{}",
        stdout(&small)
    );
    assert_eq!(before, fingerprint(dir.path()), "plan writes nothing");
}

fn refused(o: &std::process::Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} in {err}");
}

#[test]
fn bad_inputs_are_one_line_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // Two tables, no keys and nothing to infer them from.
    let two = d.join("two");
    std::fs::create_dir(&two).expect("mkdir");
    std::fs::write(two.join("a.csv"), "x,y\n1,2\n3,4\n").expect("write");
    std::fs::write(two.join("b.csv"), "u,v\n1,2\n").expect("write");
    refused(&relanon(d, &["init", "two"]), "pass --entity TABLE");
    // The entity named has no key, and other tables exist.
    refused(
        &relanon(d, &["init", "two", "--entity", "a"]),
        "has no primary key",
    );
    refused(
        &relanon(d, &["init", "two", "--entity", "nope"]),
        "no table 'nope'",
    );
    // An empty database.
    rusqlite::Connection::open(d.join("empty.sqlite"))
        .and_then(|c| c.execute_batch("PRAGMA user_version = 1;"))
        .expect("create");
    refused(&relanon(d, &["init", "empty.sqlite"]), "holds no tables");
    // A file that is not a warehouse.
    std::fs::write(d.join("junk.sqlite"), "not a database at all, just text").expect("write");
    let o = relanon(d, &["init", "junk.sqlite"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    refused(&relanon(d, &["init", "missing.sqlite"]), "missing.sqlite");
    refused(
        &relanon(d, &["init", "two", "--entity", "a", "--k", "1"]),
        "k must be at least 2",
    );
    let written: Vec<_> = std::fs::read_dir(d)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".decl.sql"))
        .collect();
    assert!(written.is_empty(), "nothing written: {written:?}");
}

#[test]
fn an_existing_file_is_replaced_only_with_overwrite_and_only_if_init_wrote_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    source(d, "rental");
    assert!(relanon(d, &["init", "rental.sqlite"]).status.success());
    refused(&relanon(d, &["init", "rental.sqlite"]), "pass --overwrite");
    let o = relanon(d, &["init", "rental.sqlite", "--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(d.join("mine.sql"), "-- my own declarations\n").expect("write");
    refused(
        &relanon(
            d,
            &["init", "rental.sqlite", "--out", "mine.sql", "--overwrite"],
        ),
        "is not a declarations file relanon wrote",
    );
    assert_eq!(
        std::fs::read_to_string(d.join("mine.sql")).expect("kept"),
        "-- my own declarations\n"
    );
    refused(
        &relanon(d, &["init", "rental.sqlite", "--out", "rental.sqlite"]),
        "relanon never writes over what it reads",
    );
}

/// A column with no value gets a role with the reason; a population below k lowers k, said
/// in the file.
#[test]
fn all_null_columns_and_small_populations_are_said_in_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let db = rusqlite::Connection::open(d.join("few.sqlite")).expect("create");
    db.execute_batch(
        "CREATE TABLE \"Patient List\" (id INTEGER PRIMARY KEY, \"Birth Year\" INTEGER, nickname_2 TEXT, empty TEXT);
         INSERT INTO \"Patient List\" VALUES (1, 1970, NULL, NULL), (2, 1971, NULL, NULL), (3, 1984, NULL, NULL);",
    )
    .expect("fill");
    drop(db);
    let o = relanon(d, &["init", "few.sqlite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.join("few.decl.sql")).expect("written");
    let empty = line_of(&text, "LABEL COLUMN \"Patient List\".\"empty\"");
    assert!(
        empty.contains("AS IDENTIFIER; -- every value is NULL"),
        "{empty}"
    );
    assert!(
        text.contains("-- review: k = 5 was asked for, but Patient List has only 3 rows"),
        "{text}"
    );
    assert!(
        text.contains("ANONYMIZE \"Patient List\" WITH (k = 3);"),
        "{text}"
    );
    let a = relanon(d, &["anonymize", "few.decl.sql"]);
    assert!(a.status.success(), "{}\n{text}", stderr(&a));
}

/// The paper's Table II as three CSV files without keys: keys inferred (`scid` is read as a
/// key), the entity is the table the others hang under, k lowered to the four students.
#[test]
fn table2_csv_files_run_with_inferred_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    crate::common::copy_dir(&fixture("table2"), &dir.path().join("t2"));
    let o = relanon(dir.path(), &["init", "t2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("t2.decl.sql")).expect("written");
    assert!(
        text.contains("CREATE ENTITY \"students\" ON \"students\" (\"sid\");"),
        "{text}"
    );
    assert!(
        text.contains("ALTER TABLE \"courses\" ADD PRIMARY KEY (\"scid\"); -- inferred"),
        "{text}"
    );
    assert!(text.contains("ALTER TABLE \"books\" ADD FOREIGN KEY (\"scid\") REFERENCES \"courses\" (\"scid\"); -- inferred"), "{text}");
    assert!(
        text.contains("ANONYMIZE \"students\" WITH (k = 4);"),
        "{text}"
    );
    let a = relanon(
        dir.path(),
        &["anonymize", "t2.decl.sql", "--key-map", "keys.json"],
    );
    assert!(a.status.success(), "{}\n{text}", stderr(&a));
    let v = relanon(
        dir.path(),
        &["verify", "t2.decl.sql", "--key-map", "keys.json"],
    );
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}

/// A hierarchy that does not fit the data is said by `plan`, before a run would stop on it.
#[test]
fn plan_warns_of_a_hierarchy_that_does_not_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    source(dir.path(), "rental");
    assert!(relanon(dir.path(), &["init", "rental.sqlite"])
        .status
        .success());
    let decl = dir.path().join("rental.decl.sql");
    let text = std::fs::read_to_string(&decl).expect("written");
    let text = text.replace(
        "CREATE HIERARCHY \"customer.create_date\" AS DATE PARTS (month, quarter, year);",
        "CREATE HIERARCHY \"customer.create_date\" AS BANDS (10, 20);",
    );
    std::fs::write(&decl, &text).expect("edit");
    let p = relanon(dir.path(), &["plan", "rental.decl.sql"]);
    assert!(p.status.success(), "{}", stderr(&p));
    let out = stdout(&p);
    assert!(
        out.contains("warning: anonymize will refuse: column customer.create_date: ")
            && out.contains("BANDS generalizes numbers"),
        "{out}"
    );
}

/// A text column of a child table whose values each belong to one customer (a ship-to name,
/// repeated on every order of its customer, so under half as many values as rows) names the
/// customer: an identifier, not a grouped quasi-identifier, whatever its distinct share.
#[test]
fn a_child_value_held_by_one_entity_is_an_identifier() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = source(dir.path(), "sales");
    let db = rusqlite::Connection::open(&path).expect("open");
    db.execute_batch(
        r#"ALTER TABLE "Orders" ADD COLUMN "ShipName" TEXT;
           UPDATE "Orders" SET "ShipName" = 'Ship to ' || "CustomerID";"#,
    )
    .expect("add ShipName");
    let (values, rows): (i64, i64) = db
        .query_row(
            r#"SELECT COUNT(DISTINCT "ShipName"), COUNT(*) FROM "Orders""#,
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("count");
    assert!(2 * values < rows, "{values} values in {rows} rows");
    drop(db);
    let text = round_trip(dir.path(), "sales", &[]);
    let line = line_of(&text, r#"LABEL COLUMN "Orders"."ShipName""#);
    assert!(line.contains("AS IDENTIFIER"), "{line}");
}
