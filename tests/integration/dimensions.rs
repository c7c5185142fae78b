//! A warehouse with dimension tables: a QI hierarchy defined by a SELECT over dimensions, the
//! dimensions copied into the release, an unrelated table left out, an analyst view rewritten
//! onto the release, and `keys = 'preserve'` verified without a key map.

use crate::common::*;

fn shop(dir: &std::path::Path) {
    let db = rusqlite::Connection::open(dir.join("shop.sqlite")).expect("create");
    db.execute_batch(
        "CREATE TABLE categories (category_id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE items (item_id INTEGER PRIMARY KEY, category_id INTEGER REFERENCES categories(category_id), title TEXT);
         CREATE TABLE customers (cid INTEGER PRIMARY KEY, name TEXT, city TEXT);
         CREATE TABLE orders (oid INTEGER PRIMARY KEY, cid INTEGER REFERENCES customers(cid), item_id INTEGER REFERENCES items(item_id), amount REAL);
         CREATE TABLE audit_log (id INTEGER PRIMARY KEY, note TEXT);
         INSERT INTO categories VALUES (1, 'Books'), (2, 'Music');
         INSERT INTO items VALUES (10, 1, 'Dune'), (11, 1, 'Emma'), (20, 2, 'Blue'), (21, 2, 'Kind of Blue');
         INSERT INTO audit_log VALUES (1, 'customer 3 called about a refund');",
    )
    .expect("schema");
    let cities = [
        "Lyon", "Nice", "Lyon", "Nice", "Paris", "Paris", "Lyon", "Nice",
    ];
    let mut oid = 100;
    for (i, city) in cities.iter().enumerate() {
        let cid = i as i64 + 1;
        db.execute(
            "INSERT INTO customers VALUES (?1, ?2, ?3)",
            rusqlite::params![cid, format!("Customer {cid}"), city],
        )
        .expect("insert");
        for j in 0..(1 + i % 3) {
            oid += 1;
            let item = [10, 11, 20, 21][(i + j) % 4];
            db.execute(
                "INSERT INTO orders VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![oid, cid, item, 9.5 + j as f64],
            )
            .expect("insert");
        }
    }
}

const DECL: &str = "
SET source = 'shop.sqlite';
SET target = 'shop-release.sqlite';
SET keys = 'preserve';
CREATE HIERARCHY item_h AS SELECT i.item_id, c.name FROM items i JOIN categories c ON c.category_id = i.category_id;
CREATE HIERARCHY city_h AS VALUES ('Lyon', 'South'), ('Nice', 'South'), ('Paris', 'North');
CREATE ENTITY customer ON customers (cid);
LABEL COLUMN customers.name AS IDENTIFIER;
LABEL COLUMN customers.city AS QUASI IDENTIFIER USING city_h;
LABEL COLUMN orders.item_id AS QUASI IDENTIFIER USING item_h;
LABEL COLUMN orders.amount AS SENSITIVE;
LABEL TABLE categories AS DIMENSION;
LABEL TABLE categories DEFAULT INSENSITIVE;
LABEL TABLE items AS DIMENSION;
LABEL TABLE items DEFAULT INSENSITIVE;
ANONYMIZE customer WITH (k = 2, algorithm = 'miracle');
CREATE VIEW spend AS SELECT c.city, SUM(o.amount) AS total FROM Customers c JOIN Orders o ON o.cid = c.cid GROUP BY c.city;
";

#[test]
fn dimensions_views_and_preserved_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    shop(dir.path());
    std::fs::write(dir.path().join("shop.sql"), DECL).expect("write");
    let o = relanon(dir.path(), &["anonymize", "shop.sql"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("keys = 'preserve'"),
        "preserving keys warns: {}",
        stderr(&o)
    );
    let v = relanon(dir.path(), &["verify", "shop.sql"]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));

    let db = rusqlite::Connection::open(dir.path().join("shop-release.sqlite")).expect("open");
    let tables: Vec<String> = column(
        &db,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    );
    assert_eq!(
        tables,
        ["categories", "customers", "items", "orders"],
        "dimensions copied, unrelated tables left out"
    );
    let name_cols: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('customers') WHERE name = 'name'",
            [],
            |r| r.get(0),
        )
        .expect("q");
    assert_eq!(name_cols, 0, "the IDENTIFIER column is dropped");
    // Item ids are generalized to category names from the SELECT hierarchy, or stay leaves.
    let labels: Vec<String> = column(&db, "SELECT DISTINCT item_id FROM orders");
    assert!(
        labels
            .iter()
            .all(|l| ["10", "11", "20", "21", "Books", "Music", "*"].contains(&l.as_str())),
        "{labels:?}"
    );
    // The view was rewritten onto the release and runs there.
    let total: f64 = db
        .query_row("SELECT SUM(total) FROM spend", [], |r| r.get(0))
        .expect("view runs");
    assert!(total > 0.0);
    // Preserved keys: released customer keys are source keys.
    let max_cid: i64 = db
        .query_row("SELECT MAX(cid) FROM customers", [], |r| r.get(0))
        .expect("q");
    assert!(max_cid <= 8);
}

#[test]
fn a_view_reading_an_identifier_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    shop(dir.path());
    std::fs::write(
        dir.path().join("shop.sql"),
        format!("{DECL}\nCREATE VIEW leak AS SELECT name FROM customers;\n"),
    )
    .expect("write");
    let o = relanon(dir.path(), &["anonymize", "shop.sql"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("IDENTIFIER column customers.name"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("shop-release.sqlite").exists());
}
