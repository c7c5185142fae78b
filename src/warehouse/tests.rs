//! Reading and writing warehouses end to end, on files made in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Float64Array, Int64Array, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use rusqlite::Connection;

use super::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn column_texts(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let col = batch.column_by_name(name).expect("test column exists");
    (0..col.len())
        .map(|r| render_value(col.as_ref(), r))
        .collect()
}

fn texts(v: &[Option<&str>]) -> Vec<Option<String>> {
    v.iter().map(|x| x.map(str::to_string)).collect()
}

fn university(dir: &Path) -> PathBuf {
    let path = dir.join("university.sqlite");
    let conn = Connection::open(&path).expect("create test db");
    conn.execute_batch(
        r#"
        PRAGMA foreign_keys = OFF;
        CREATE TABLE students (
            sid INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, yob INTEGER, gpa REAL,
            mixed, num, blobby BLOB, none_int INT, none_real DOUBLE, none_text VARCHAR(10));
        INSERT INTO students (sid, name, yob, gpa, mixed, num, blobby) VALUES
            (3, 'Cy', 1990, 3.72, 4, 1, NULL),
            (1, 'Ann', NULL, 4, 'x', 2.5, x'0102'),
            (2, 'Bob', 1985, NULL, 2.5, NULL, NULL);
        CREATE TABLE courses (
            sid INTEGER REFERENCES students, cid INTEGER, course TEXT,
            PRIMARY KEY (sid, cid));
        INSERT INTO courses VALUES (1, 10, 'Math'), (1, 11, 'CS'), (3, 10, 'Math');
        CREATE TABLE books (
            bid INTEGER PRIMARY KEY, SID INT, CID INT, title TEXT,
            FOREIGN KEY (sid, cid) REFERENCES Courses (SID, CID),
            FOREIGN KEY (bid) REFERENCES nowhere (id),
            FOREIGN KEY (sid) REFERENCES students);
        INSERT INTO books VALUES (100, 1, 10, 'Algebra');
        CREATE VIEW student_names AS SELECT name FROM students;
        "#,
    )
    .expect("fill test db");
    path
}

#[tokio::test]
async fn opens_sqlite_with_keys_and_value_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wh = Warehouse::open(&university(dir.path()))
        .await
        .expect("open sqlite");
    assert_eq!(wh.kind, SourceKind::Sqlite);
    let names: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
    // sqlite_sequence (from AUTOINCREMENT) and the view are not tables.
    assert_eq!(names, ["students", "courses", "books"]);

    let students = wh.table("students").expect("students");
    let types: Vec<(&str, &DataType)> = students
        .columns
        .iter()
        .map(|c| (c.name.as_str(), &c.data_type))
        .collect();
    assert_eq!(
        types,
        [
            ("sid", &DataType::Int64),
            ("name", &DataType::Utf8),
            ("yob", &DataType::Int64),
            ("gpa", &DataType::Float64),
            ("mixed", &DataType::Utf8),
            ("num", &DataType::Float64),
            ("blobby", &DataType::Binary),
            ("none_int", &DataType::Int64),
            ("none_real", &DataType::Float64),
            ("none_text", &DataType::Utf8),
        ]
    );
    assert_eq!(students.primary_key, s(&["sid"]));

    let courses = wh.table("courses").expect("courses");
    assert_eq!(courses.primary_key, s(&["sid", "cid"]));
    // Implicit parent columns resolve to the parent's primary key.
    assert_eq!(
        courses.foreign_keys,
        vec![ForeignKey {
            columns: s(&["sid"]),
            ref_table: "students".into(),
            ref_columns: s(&["sid"])
        }]
    );
    let books = wh.table("books").expect("books");
    // Names keep the case of the catalog, not of the constraint.
    assert_eq!(
        books.foreign_keys,
        vec![
            ForeignKey {
                columns: s(&["SID", "CID"]),
                ref_table: "courses".into(),
                ref_columns: s(&["sid", "cid"])
            },
            ForeignKey {
                columns: s(&["SID"]),
                ref_table: "students".into(),
                ref_columns: s(&["sid"])
            },
        ]
    );
    assert_eq!(wh.warnings().len(), 1, "{:?}", wh.warnings());
    assert!(wh.warnings()[0].contains("nowhere"));

    let batch = wh
        .read_table("students", None, &s(&["sid"]))
        .await
        .expect("read students");
    assert_eq!(
        column_texts(&batch, "sid"),
        texts(&[Some("1"), Some("2"), Some("3")])
    );
    assert_eq!(
        column_texts(&batch, "gpa"),
        texts(&[Some("4"), None, Some("3.72")])
    );
    assert_eq!(
        column_texts(&batch, "mixed"),
        texts(&[Some("x"), Some("2.5"), Some("4")])
    );
    assert_eq!(
        column_texts(&batch, "num"),
        texts(&[Some("2.5"), None, Some("1")])
    );
    assert_eq!(
        column_texts(&batch, "blobby"),
        texts(&[Some("0102"), None, None])
    );
    assert_eq!(column_texts(&batch, "none_int"), texts(&[None, None, None]));

    // NULLs sort last; a projection keeps the requested order.
    let batch = wh
        .read_table("students", Some(&s(&["name", "yob"])), &s(&["yob"]))
        .await
        .expect("read");
    assert_eq!(
        batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["name", "yob"]
    );
    assert_eq!(
        column_texts(&batch, "yob"),
        texts(&[Some("1985"), Some("1990"), None])
    );

    let rows = wh
        .sql("SELECT COUNT(*) AS n FROM courses c JOIN students s ON c.sid = s.sid")
        .await
        .expect("join");
    assert_eq!(
        render_value(rows[0].column(0).as_ref(), 0).as_deref(),
        Some("3")
    );
}

#[tokio::test]
async fn keeps_mixed_case_and_spaced_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chinook.db");
    let conn = Connection::open(&path).expect("create");
    conn.execute_batch(
        r#"CREATE TABLE "Invoice Line" ("InvoiceLineId" INTEGER PRIMARY KEY, "UnitPrice" NUMERIC, "Track Id" INTEGER);
           INSERT INTO "Invoice Line" VALUES (2, 0.99, 7), (1, 1.99, 8);
           CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT);
           INSERT INTO Track VALUES (7, 'Song');"#,
    )
    .expect("fill");
    drop(conn);
    let wh = Warehouse::open(&path).await.expect("open");
    assert_eq!(
        wh.table("invoice line").map(|t| t.name.as_str()),
        Some("Invoice Line")
    );
    let batch = wh
        .read_table(
            "Invoice Line",
            Some(&s(&["unitprice"])),
            &s(&["InvoiceLineId"]),
        )
        .await
        .expect("read");
    assert_eq!(
        column_texts(&batch, "UnitPrice"),
        texts(&[Some("1.99"), Some("0.99")])
    );
    let rows = wh
        .sql(r#"SELECT t.Name, l."UnitPrice" FROM "Invoice Line" l JOIN Track t ON l."Track Id" = t.TrackId"#)
        .await
        .expect("unquoted mixed-case identifiers keep their case");
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    assert!(wh.table("nope").is_none());
    assert!(matches!(
        wh.read_table("nope", None, &[]).await,
        Err(WarehouseError::UnknownTable { .. })
    ));
    assert!(matches!(
        wh.read_table("Track", Some(&s(&["nope"])), &[]).await,
        Err(WarehouseError::UnknownColumn { .. })
    ));
}

/// A text column holding a BLOB is read as text (the BLOB as the text it holds, with a
/// warning naming its row), not as a Binary column that would show every value as hex; a
/// BLOB that is not text is refused with its row named.
#[tokio::test]
async fn a_blob_among_text_is_named_and_text_stays_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixed.db");
    let conn = Connection::open(&path).expect("create");
    conn.execute_batch(
        "CREATE TABLE people (id INTEGER PRIMARY KEY, city TEXT, photo BLOB);
         INSERT INTO people VALUES (1, 'Oslo', x'00ff'), (2, CAST('Bergen' AS BLOB), x'01'),
                                   (3, 'Bergen', NULL);",
    )
    .expect("fill");
    let wh = Warehouse::open(&path).await.expect("open");
    let batch = wh
        .read_table("people", None, &s(&["id"]))
        .await
        .expect("read");
    assert_eq!(
        column_texts(&batch, "city"),
        texts(&[Some("Oslo"), Some("Bergen"), Some("Bergen")])
    );
    let warned: Vec<&String> = wh
        .warnings()
        .iter()
        .filter(|w| w.contains("city"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", wh.warnings());
    assert!(
        warned[0].contains("1 BLOB value(s) at rowid 2"),
        "{}",
        warned[0]
    );
    // A column of BLOBs alone stays binary and unwarned.
    assert!(!wh.warnings().iter().any(|w| w.contains("photo")));
    conn.execute_batch("UPDATE people SET city = x'c328' WHERE id = 3")
        .expect("not UTF-8");
    drop(conn);
    let err = Warehouse::open(&path).await.err().expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("'city'") && msg.contains("not text at rowid 3"),
        "{msg}"
    );
}

fn write_parquet_file(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).expect("create parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

fn people() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("pid", DataType::Int64, false),
        Field::new("Name", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![2, 1])),
            Arc::new(StringArray::from(vec![Some("Bo"), None])),
        ],
    )
    .expect("batch")
}

#[tokio::test]
async fn opens_directory_of_parquet_and_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_parquet_file(&dir.path().join("people.parquet"), &people());
    let tags = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("big", DataType::LargeUtf8, true),
            Field::new(
                "dict",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
        ])),
        vec![
            Arc::new(arrow::array::LargeStringArray::from(vec!["x"])) as ArrayRef,
            Arc::new(
                vec!["y"]
                    .into_iter()
                    .collect::<arrow::array::DictionaryArray<arrow::datatypes::Int32Type>>(),
            ),
        ],
    )
    .expect("tags batch");
    write_parquet_file(&dir.path().join("tags.parquet"), &tags);
    std::fs::write(
        dir.path().join("visits.csv"),
        "vid,pid,score,day,note\n1,2,2.5,2021-03-04,\n2,1,,2021-03-05,\n3,2,1,,\n",
    )
    .expect("csv");
    std::fs::write(dir.path().join("views.sql"), "CREATE VIEW v AS SELECT 1;").expect("views");
    std::fs::write(dir.path().join("README.txt"), "not a table").expect("readme");
    std::fs::write(dir.path().join(".hidden.csv"), "a\n1\n").expect("hidden");
    let wh = Warehouse::open(dir.path()).await.expect("open dir");
    assert_eq!(wh.kind, SourceKind::Parquet);
    let names: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["people", "tags", "visits"]);
    let visits = wh.table("visits").expect("visits");
    assert!(visits.primary_key.is_empty() && visits.foreign_keys.is_empty());
    let types: Vec<&DataType> = visits.columns.iter().map(|c| &c.data_type).collect();
    // A column with no values at all is text, not Arrow's Null type.
    assert_eq!(
        types,
        [
            &DataType::Int64,
            &DataType::Int64,
            &DataType::Float64,
            &DataType::Date32,
            &DataType::Utf8
        ]
    );
    assert_eq!(
        wh.table("people").expect("people").columns[1].data_type,
        DataType::Utf8
    );
    // Large and dictionary strings are held as plain Utf8.
    let tags = wh.table("tags").expect("tags");
    assert!(
        tags.columns.iter().all(|c| c.data_type == DataType::Utf8),
        "{:?}",
        tags.columns
    );
    let batch = wh.read_table("tags", None, &[]).await.expect("read tags");
    assert_eq!(column_texts(&batch, "dict"), texts(&[Some("y")]));

    let batch = wh
        .read_table("visits", None, &s(&["score"]))
        .await
        .expect("read");
    assert_eq!(
        column_texts(&batch, "vid"),
        texts(&[Some("3"), Some("1"), Some("2")])
    );
    assert_eq!(
        column_texts(&batch, "day"),
        texts(&[None, Some("2021-03-04"), Some("2021-03-05")])
    );
    let batch = wh
        .read_table("people", None, &s(&["name"]))
        .await
        .expect("case-insensitive column");
    assert_eq!(column_texts(&batch, "pid"), texts(&[Some("2"), Some("1")]));
    let rows = wh
        .sql("SELECT p.Name FROM visits v JOIN people p ON v.pid = p.pid WHERE v.vid = 1")
        .await
        .expect("join");
    assert_eq!(
        render_value(rows[0].column(0).as_ref(), 0).as_deref(),
        Some("Bo")
    );
}

#[tokio::test]
async fn empty_table_keeps_its_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("e.sqlite");
    Connection::open(&path)
        .and_then(|c| c.execute_batch("CREATE TABLE t (a INTEGER, b TEXT)"))
        .expect("create");
    let wh = Warehouse::open(&path).await.expect("open");
    let batch = wh.read_table("t", None, &s(&["a"])).await.expect("read");
    assert_eq!(batch.num_rows(), 0);
    assert_eq!(batch.schema().field(0).data_type(), &DataType::Int64);
    assert_eq!(batch.schema().field(1).data_type(), &DataType::Utf8);
    let batch = wh
        .read_table("t", Some(&[]), &[])
        .await
        .expect("no columns");
    assert_eq!((batch.num_columns(), batch.num_rows()), (0, 0));
}

#[tokio::test]
async fn declares_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_parquet_file(&dir.path().join("people.parquet"), &people());
    std::fs::write(dir.path().join("visits.csv"), "vid,pid\n1,2\n").expect("csv");
    let mut wh = Warehouse::open(dir.path()).await.expect("open");
    let fk = |ref_columns: &[&str]| ForeignKey {
        columns: s(&["PID"]),
        ref_table: "People".into(),
        ref_columns: s(ref_columns),
    };
    let err = wh
        .declare_foreign_key("visits", fk(&[]))
        .expect_err("parent has no key yet");
    assert!(err.to_string().contains("no primary key"), "{err}");
    assert!(matches!(
        wh.declare_primary_key("people", &s(&["nope"])),
        Err(WarehouseError::UnknownColumn { .. })
    ));
    assert!(matches!(
        wh.declare_primary_key("nope", &s(&["pid"])),
        Err(WarehouseError::UnknownTable { .. })
    ));
    wh.declare_primary_key("people", &s(&["PID"]))
        .expect("declare pk");
    wh.declare_primary_key("people", &s(&["pid"]))
        .expect("same key again");
    assert!(matches!(
        wh.declare_primary_key("people", &s(&["Name"])),
        Err(WarehouseError::KeyConflict(_))
    ));
    wh.declare_foreign_key("visits", fk(&[]))
        .expect("implicit parent columns");
    wh.declare_foreign_key("visits", fk(&["pid"]))
        .expect("duplicate is ignored");
    assert!(matches!(
        wh.declare_foreign_key("visits", fk(&["pid", "Name"])),
        Err(WarehouseError::KeyConflict(_))
    ));
    assert_eq!(
        wh.table("visits").expect("visits").foreign_keys,
        vec![ForeignKey {
            columns: s(&["pid"]),
            ref_table: "people".into(),
            ref_columns: s(&["pid"])
        }]
    );
    assert_eq!(wh.table("people").expect("people").primary_key, s(&["pid"]));

    let mut sq = Warehouse::open(&university(dir.path()))
        .await
        .expect("open sqlite");
    sq.declare_primary_key("courses", &s(&["cid", "sid"]))
        .expect("catalog key in another order");
    let err = sq
        .declare_primary_key("courses", &s(&["cid"]))
        .expect_err("differs from the catalog");
    assert!(err.to_string().contains("SQLite catalog"), "{err}");
}

#[tokio::test]
async fn bad_sources_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = Warehouse::open(&dir.path().join("missing.sqlite")).await;
    assert!(matches!(missing, Err(WarehouseError::NotFound { .. })));

    let garbage = dir.path().join("garbage.sqlite");
    std::fs::write(&garbage, b"this is not a database at all, just bytes").expect("write");
    assert!(matches!(
        Warehouse::open(&garbage).await,
        Err(WarehouseError::NotAWarehouse { .. })
    ));

    // A real database with enough rows to span many pages, cut short at two points.
    let full = dir.path().join("full.sqlite");
    let conn = Connection::open(&full).expect("create");
    conn.execute_batch(
        "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
         INSERT INTO t SELECT i, printf('row %d with some padding text', i) FROM n;",
    )
    .expect("fill");
    drop(conn);
    let bytes = std::fs::read(&full).expect("read");
    for cut in [100, 2048, bytes.len() / 2] {
        let truncated = dir.path().join(format!("cut{cut}.sqlite"));
        std::fs::write(&truncated, &bytes[..cut]).expect("write");
        let err = Warehouse::open(&truncated)
            .await
            .err()
            .unwrap_or_else(|| panic!("cut at {cut} opened"));
        assert!(!err.to_string().contains('\n'));
    }
    // A corrupt page in the middle, header intact.
    let mut damaged = bytes.clone();
    for b in &mut damaged[4096..bytes.len() - 4096] {
        *b = 0xA5;
    }
    let path = dir.path().join("damaged.sqlite");
    std::fs::write(&path, &damaged).expect("write");
    assert!(matches!(
        Warehouse::open(&path).await,
        Err(WarehouseError::Sqlite { .. })
    ));

    let pq = dir.path().join("pq");
    std::fs::create_dir(&pq).expect("mkdir");
    std::fs::write(pq.join("t.parquet"), b"PAR1 garbage that is not parquet").expect("write");
    assert!(matches!(
        Warehouse::open(&pq).await,
        Err(WarehouseError::Parquet { .. })
    ));
    write_parquet_file(&pq.join("t.parquet"), &people());
    let good = std::fs::read(pq.join("t.parquet")).expect("read");
    std::fs::write(pq.join("t.parquet"), &good[..good.len() - 10]).expect("truncate");
    assert!(matches!(
        Warehouse::open(&pq).await,
        Err(WarehouseError::Parquet { .. })
    ));
    std::fs::write(pq.join("t.parquet"), &good).expect("restore");
    std::fs::write(pq.join("t.csv"), "a\n1\n").expect("write");
    assert!(matches!(
        Warehouse::open(&pq).await,
        Err(WarehouseError::DuplicateTable { .. })
    ));

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    assert!(matches!(
        Warehouse::open(&empty).await,
        Err(WarehouseError::EmptyDirectory { .. })
    ));
}

fn release() -> ReleaseSet {
    let students = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("sid", DataType::Int64, false),
            Field::new("Year Of Birth", DataType::Utf8, true),
            Field::new("gpa", DataType::Float64, true),
            Field::new("born", DataType::Date32, true),
            Field::new("photo", DataType::Binary, true),
            Field::new("active", DataType::Boolean, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
            Arc::new(StringArray::from(vec![
                Some("[1990,1999]"),
                Some("*"),
                None,
            ])),
            Arc::new(Float64Array::from(vec![Some(4.0), Some(3.72), None])),
            Arc::new(Date32Array::from(vec![Some(18690), None, Some(0)])),
            Arc::new(BinaryArray::from(vec![
                Some(&b"\x00\x01"[..]),
                None,
                Some(&b""[..]),
            ])),
            Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        ],
    )
    .expect("students batch");
    let courses = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("scid", DataType::Int64, false),
            Field::new("sid", DataType::Int64, true),
            Field::new("course", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![10, 11])) as ArrayRef,
            Arc::new(Int64Array::from(vec![1, 3])),
            Arc::new(StringArray::from(vec!["Science", "Math"])),
        ],
    )
    .expect("courses batch");
    ReleaseSet {
        tables: vec![
            ReleaseTable { name: "Student Table".into(), batch: students, primary_key: s(&["sid"]), foreign_keys: vec![] },
            ReleaseTable {
                name: "courses".into(),
                batch: courses,
                primary_key: s(&["scid"]),
                foreign_keys: vec![ForeignKey { columns: s(&["sid"]), ref_table: "Student Table".into(), ref_columns: vec![] }],
            },
        ],
        views: vec![(
            "course load".into(),
            "SELECT c.course, COUNT(*) AS n FROM courses c JOIN \"Student Table\" s ON c.sid = s.sid GROUP BY c.course -- per course\n;".into(),
        )],
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

async fn assert_same_values(wh: &Warehouse, release: &ReleaseSet) {
    for t in &release.tables {
        let back = wh
            .read_table(&t.name, None, &t.primary_key)
            .await
            .expect("read back");
        assert_eq!(back.num_rows(), t.batch.num_rows(), "{}", t.name);
        for f in t.batch.schema().fields() {
            let want: Vec<Option<String>> = column_texts(&t.batch, f.name());
            let got = column_texts(&back, f.name());
            if f.data_type() == &DataType::Boolean && wh.kind == SourceKind::Sqlite {
                // SQLite has no boolean: 1 / 0.
                assert_eq!(got, texts(&[Some("1"), Some("0"), None]));
            } else {
                assert_eq!(got, want, "{}.{}", t.name, f.name());
            }
        }
    }
}

#[tokio::test]
async fn sqlite_release_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("out").join("release.sqlite");
    let rel = release();
    let staged = write_staged(&target, &rel, false).expect("stage");
    assert_eq!(staged.kind(), TargetKind::Sqlite);
    assert!(staged.path().exists() && !target.exists());
    assert!(staged
        .path()
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.')));
    assert_eq!(staged.commit().expect("commit"), target);
    assert_eq!(listing(&dir.path().join("out")), ["release.sqlite"]);

    let wh = Warehouse::open(&target).await.expect("reopen");
    assert_eq!(
        wh.tables
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["Student Table", "courses"]
    );
    let st = wh.table("Student Table").expect("students");
    assert_eq!(st.primary_key, s(&["sid"]));
    let types: Vec<&DataType> = st.columns.iter().map(|c| &c.data_type).collect();
    assert_eq!(
        types,
        [
            &DataType::Int64,
            &DataType::Utf8,
            &DataType::Float64,
            &DataType::Utf8,
            &DataType::Binary,
            &DataType::Int64
        ]
    );
    assert_eq!(
        wh.table("courses").expect("courses").foreign_keys,
        vec![ForeignKey {
            columns: s(&["sid"]),
            ref_table: "Student Table".into(),
            ref_columns: s(&["sid"])
        }]
    );
    assert_same_values(&wh, &rel).await;
    let conn = Connection::open(&target).expect("open");
    let n: i64 = conn
        .query_row("SELECT SUM(n) FROM \"course load\"", [], |r| r.get(0))
        .expect("the view is written and works");
    assert_eq!(n, 2);
}

#[tokio::test]
async fn parquet_release_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("release");
    let rel = release();
    let staged = write_staged(&target, &rel, false).expect("stage");
    assert_eq!(staged.kind(), TargetKind::Parquet);
    staged.commit().expect("commit");
    assert_eq!(
        listing(&target),
        ["Student Table.parquet", "courses.parquet", "views.sql"]
    );
    let views = std::fs::read_to_string(target.join("views.sql")).expect("views.sql");
    assert!(
        views.starts_with("CREATE VIEW \"course load\" AS SELECT"),
        "{views}"
    );
    assert!(views.trim_end().ends_with("-- per course\n;"), "{views}");

    let wh = Warehouse::open(&target).await.expect("reopen");
    for t in &rel.tables {
        let meta = wh.table(&t.name).expect("table");
        assert_eq!(meta.columns.len(), t.batch.num_columns());
        for (c, f) in meta.columns.iter().zip(t.batch.schema().fields()) {
            assert_eq!((&c.name, &c.data_type), (f.name(), f.data_type()));
        }
    }
    assert_same_values(&wh, &rel).await;

    // Without views, there is no views.sql.
    let plain = dir.path().join("plain");
    let mut rel = release();
    rel.views.clear();
    write_staged(&plain, &rel, false)
        .expect("stage")
        .commit()
        .expect("commit");
    assert_eq!(
        listing(&plain),
        ["Student Table.parquet", "courses.parquet"]
    );
}

#[tokio::test]
async fn existing_targets_need_overwrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["r.sqlite", "r_dir"] {
        let target = dir.path().join(name);
        write_staged(&target, &release(), false)
            .expect("stage")
            .commit()
            .expect("first commit");
        let err = write_staged(&target, &release(), false).expect_err("exists");
        assert_eq!(
            err.to_string(),
            format!(
                "target '{}' exists: pass --overwrite to replace it",
                target.display()
            )
        );
        write_staged(&target, &release(), true)
            .expect("stage")
            .commit()
            .expect("overwrite");
        assert!(Warehouse::open(&target).await.is_ok());
    }
    // The target appearing while staging is refused at commit too, and cleaned up.
    let late = dir.path().join("late.sqlite");
    let staged = write_staged(&late, &release(), false).expect("stage");
    std::fs::write(&late, b"").expect("appears");
    assert!(matches!(
        staged.commit(),
        Err(WarehouseError::TargetExists { .. })
    ));
    std::fs::remove_file(&late).expect("remove");

    // --overwrite does not wipe something that is not a warehouse.
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(docs.join("notes.txt"), "keep me").expect("write");
    assert!(matches!(
        write_staged(&docs, &release(), true),
        Err(WarehouseError::TargetNotReplaceable { .. })
    ));
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "keep me").expect("write");
    assert!(matches!(
        write_staged(&text, &release(), true),
        Err(WarehouseError::TargetNotReplaceable { .. })
    ));
    assert_eq!(
        listing(dir.path()),
        ["docs", "notes.db", "r.sqlite", "r_dir"]
    );
}

#[test]
fn dropped_or_failed_stages_leave_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["a.sqlite", "a_dir"] {
        let staged = write_staged(&dir.path().join(name), &release(), false).expect("stage");
        assert!(staged.path().exists());
        drop(staged);
        assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    }
    let mut bad_view = release();
    bad_view
        .views
        .push(("broken".into(), "SELECT nope FROM missing_table".into()));
    let err = write_staged(&dir.path().join("v.sqlite"), &bad_view, false).expect_err("bad view");
    assert!(
        matches!(&err, WarehouseError::View { name, .. } if name == "broken"),
        "{err}"
    );
    let mut bad_key = release();
    bad_key.tables[1].foreign_keys[0].ref_table = "gone".into();
    assert!(matches!(
        write_staged(&dir.path().join("k.sqlite"), &bad_key, false),
        Err(WarehouseError::InvalidRelease(_))
    ));
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[test]
fn target_kind_from_name() {
    assert_eq!(
        TargetKind::of(Path::new("x/out.sqlite")),
        TargetKind::Sqlite
    );
    assert_eq!(TargetKind::of(Path::new("out.SQLITE3")), TargetKind::Sqlite);
    assert_eq!(TargetKind::of(Path::new("out.db")), TargetKind::Sqlite);
    assert_eq!(TargetKind::of(Path::new("out")), TargetKind::Parquet);
    assert_eq!(
        TargetKind::of(Path::new("out.parquet")),
        TargetKind::Parquet
    );
}

#[test]
fn atomic_file_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub").join("secret.json");
    let write = |bytes: &[u8]| {
        let staged = staging::stage_file(&path, bytes, Some(0o600)).expect("stage");
        staging::commit_all(vec![staged], &path, true).expect("commit");
    };
    write(b"one");
    write(b"two");
    assert_eq!(std::fs::read(&path).expect("read"), b"two");
    assert_eq!(listing(&dir.path().join("sub")), ["secret.json"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// A file staged with a mode has it before its first byte: a key map is never readable by
/// others, not even while it is written.
#[cfg(unix)]
#[test]
fn a_staged_file_has_its_mode_while_it_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keys.json");
    let staged = staging::stage_written(&path, Some(0o600), |w| {
        let modes: Vec<u32> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| {
                let meta = e.expect("entry").metadata().expect("meta");
                meta.permissions().mode() & 0o777
            })
            .collect();
        assert_eq!(modes, [0o600], "the temporary, before anything is written");
        w.write_all(b"{}")
    })
    .expect("stage");
    staging::commit_all(vec![staged], &path, true).expect("commit");
    assert_eq!(std::fs::read(&path).expect("read"), b"{}");
}

#[tokio::test]
async fn one_csv_file_is_a_source_read_with_the_declared_delimiter() {
    let dir = tempfile::tempdir().expect("tempdir");
    // As ARX ships UCI Adult: ';'-separated, CRLF line ends, beside files that are not tables.
    let adult = dir.path().join("adult.csv");
    std::fs::write(
        &adult,
        "sex;age;marital-status\r\nMale;39;Never-married\r\nFemale;50;Married, spouse absent\r\n",
    )
    .expect("csv");
    std::fs::write(
        dir.path().join("adult_hierarchy_sex.csv"),
        "Male;*\nFemale;*\n",
    )
    .expect("h");
    let semicolon = SourceOptions {
        csv_delimiter: b';',
    };
    let wh = Warehouse::open_with(&adult, &semicolon)
        .await
        .expect("open one file");
    assert_eq!(wh.kind, SourceKind::Csv);
    assert!(wh.warnings().is_empty(), "{:?}", wh.warnings());
    let names: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["adult"], "the hierarchy file beside it is no table");
    let t = wh.table("adult").expect("adult");
    let types: Vec<&DataType> = t.columns.iter().map(|c| &c.data_type).collect();
    assert_eq!(types, [&DataType::Utf8, &DataType::Int64, &DataType::Utf8]);
    let batch = wh
        .read_table("adult", None, &s(&["age"]))
        .await
        .expect("read");
    assert_eq!(
        column_texts(&batch, "marital-status"),
        texts(&[Some("Never-married"), Some("Married, spouse absent")])
    );

    // Read with the default ',', the ragged rows are an error that says what to declare...
    let err = Warehouse::open(&adult)
        .await
        .err()
        .expect("ragged with ','");
    assert!(matches!(err, WarehouseError::Csv { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("if its fields are separated by ';', add SET csv_delimiter = ';'"),
        "{err}"
    );
    // ... and a file that reads as one column gets a warning saying the same.
    let sex = dir.path().join("sex.csv");
    std::fs::write(
        &sex,
        "sex;age
Male;39
",
    )
    .expect("csv");
    let wh = Warehouse::open(&sex).await.expect("open with ','");
    assert_eq!(wh.table("sex").expect("sex").columns.len(), 1);
    assert_eq!(wh.warnings().len(), 1, "{:?}", wh.warnings());
    assert!(
        wh.warnings()[0].contains("reads as one column 'sex;age'")
            && wh.warnings()[0].contains("add SET csv_delimiter = ';'"),
        "{:?}",
        wh.warnings()
    );

    // Tab-separated files in a directory.
    let tsv = dir.path().join("tsv");
    std::fs::create_dir(&tsv).expect("mkdir");
    std::fs::write(tsv.join("t.csv"), "a\tb\n1\tx,y\n").expect("tsv");
    let tab = SourceOptions {
        csv_delimiter: b'\t',
    };
    let wh = Warehouse::open_with(&tsv, &tab)
        .await
        .expect("open tsv dir");
    let batch = wh.read_table("t", None, &[]).await.expect("read");
    assert_eq!(column_texts(&batch, "b"), texts(&[Some("x,y")]));
}

#[tokio::test]
async fn one_parquet_file_is_a_source_and_a_delimiter_without_csv_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pq = dir.path().join("people.parquet");
    write_parquet_file(&pq, &people());
    let semicolon = SourceOptions {
        csv_delimiter: b';',
    };
    let wh = Warehouse::open_with(&pq, &semicolon)
        .await
        .expect("open one parquet file");
    assert_eq!(wh.kind, SourceKind::Parquet);
    let names: Vec<&str> = wh.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["people"]);
    assert_eq!(wh.warnings().len(), 1, "{:?}", wh.warnings());
    assert!(wh.warnings()[0].contains("SET csv_delimiter has no effect"));
    let sq = Warehouse::open_with(&university(dir.path()), &semicolon)
        .await
        .expect("open sqlite");
    assert!(
        sq.warnings()
            .iter()
            .any(|w| w.contains("SET csv_delimiter has no effect")),
        "{:?}",
        sq.warnings()
    );

    // Any other file is not a source; the error lists what is.
    let txt = dir.path().join("adult.data");
    std::fs::write(&txt, "a,b\n1,2\n").expect("write");
    let err = Warehouse::open(&txt).await.err().expect("not a source");
    assert!(matches!(err, WarehouseError::NotAWarehouse { .. }));
    assert!(
        err.to_string().contains("one .csv / .parquet file"),
        "{err}"
    );
}

/// A SQLite or CSV table's batches, as its reader gives them in source order.
fn read_back(table: &LoadedTable) -> Vec<RecordBatch> {
    match &table.rows {
        super::Rows::Read { reader, .. } => {
            let all = (0..table.schema.fields().len()).collect();
            super::streamed::in_order(Arc::clone(reader), all)
                .collect::<Result<_, _>>()
                .expect("read back")
        }
        super::Rows::Parquet { .. } => panic!("{} is a Parquet table", table.meta.name),
    }
}

/// Every value of column `name` over all of a loaded table's batches, as rendered.
fn loaded_texts(table: &LoadedTable, name: &str) -> Vec<Option<String>> {
    read_back(table)
        .iter()
        .flat_map(|b| column_texts(b, name))
        .collect()
}

#[test]
fn large_tables_are_read_in_rowid_pieces_on_every_thread_in_rowid_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pieces.sqlite");
    let conn = Connection::open(&path).expect("create db");
    // Rowids spread over five pieces, inserted out of order; the third piece holds the only
    // text of column v, so the whole column is text.
    conn.execute_batch(
        "CREATE TABLE big (id INTEGER PRIMARY KEY, v);
         INSERT INTO big VALUES (300000, 5), (2, 2.5), (140001, 'x'), (1, 1), (70000, NULL);
         CREATE TABLE shadow (rowid TEXT, _rowid_ TEXT, v INTEGER);
         INSERT INTO shadow (oid, rowid, _rowid_, v) VALUES (100000, 'a', 'b', 2), (5, 'c', 'd', 1);
         CREATE TABLE norowid (k INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID;
         INSERT INTO norowid VALUES (3, 'c'), (1, 'a');
         CREATE TABLE empty (a INTEGER);",
    )
    .expect("fill test db");
    drop(conn);
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool")
            .install(|| sqlite::load(&path))
            .expect("load")
            .0
    };
    let (one, two) = (on(1), on(2));
    for tables in [&one, &two] {
        let names: Vec<&str> = tables.iter().map(|t| t.meta.name.as_str()).collect();
        assert_eq!(names, ["big", "shadow", "norowid", "empty"]);
        let big = &tables[0];
        assert_eq!(big.schema.field(1).data_type(), &DataType::Utf8);
        assert_eq!(
            loaded_texts(big, "id"),
            texts(&[
                Some("1"),
                Some("2"),
                Some("70000"),
                Some("140001"),
                Some("300000")
            ])
        );
        assert_eq!(
            loaded_texts(big, "v"),
            texts(&[Some("1"), Some("2.5"), None, Some("x"), Some("5")])
        );
        // Columns named rowid and _rowid_ are read as columns, the rows in rowid order.
        let shadow = &tables[1];
        assert_eq!(
            loaded_texts(shadow, "rowid"),
            texts(&[Some("c"), Some("a")])
        );
        assert_eq!(loaded_texts(shadow, "v"), texts(&[Some("1"), Some("2")]));
        assert_eq!(
            loaded_texts(&tables[2], "v"),
            texts(&[Some("a"), Some("c")])
        );
        assert!(loaded_texts(&tables[3], "a").is_empty());
        assert_eq!(tables[3].schema.field(0).data_type(), &DataType::Int64);
    }
    // The pieces do not depend on the thread count, so neither do the batches.
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(read_back(a), read_back(b), "{}", a.meta.name);
    }
}

#[test]
fn rowid_pieces_cover_the_range_in_order() {
    for (lo, hi) in [
        (1, 1),
        (1, 65536),
        (1, 65537),
        (-5, 300_000),
        (i64::MIN, i64::MAX),
        (i64::MAX - 3, i64::MAX),
    ] {
        let pieces: Vec<(i64, i64)> = sqlite::rowid_pieces(lo, hi)
            .into_iter()
            .map(|p| p.expect("a range"))
            .collect();
        assert!(pieces.len() as i64 <= sqlite::MAX_PIECES, "{lo}..={hi}");
        assert_eq!(pieces[0].0, lo);
        assert_eq!(pieces[pieces.len() - 1].1, hi);
        for w in pieces.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 + 1 == w[1].0, "{w:?}");
        }
    }
    assert_eq!(sqlite::rowid_pieces(1, 65537).len(), 2);
}

#[test]
fn a_wal_database_loads_with_the_commits_in_its_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wal.sqlite");
    let conn = Connection::open(&path).expect("create db");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE a (x INTEGER PRIMARY KEY, y TEXT);
         INSERT INTO a VALUES (200000, 'b'), (1, 'a');
         CREATE TABLE b (z INTEGER);
         INSERT INTO b VALUES (7);",
    )
    .expect("fill test db");
    // A writer holds the database open: its last commit sits in the WAL file.
    let tables = sqlite::load(&path).expect("load").0;
    assert_eq!(
        loaded_texts(&tables[0], "y"),
        texts(&[Some("a"), Some("b")])
    );
    assert_eq!(loaded_texts(&tables[1], "z"), texts(&[Some("7")]));
    drop(conn);
    let tables = sqlite::load(&path).expect("load after the writer closed").0;
    assert_eq!(
        loaded_texts(&tables[0], "x"),
        texts(&[Some("1"), Some("200000")])
    );
}

/// A Parquet table is read by the queries, not held: counted from its footer, read in file
/// order on request, queried through a file URL (a directory named like a glob is no glob).
#[tokio::test]
async fn parquet_tables_are_streamed_not_loaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("data [2024] *");
    std::fs::create_dir(&src).expect("mkdir");
    let path = src.join("people.parquet");
    let file = std::fs::File::create(&path).expect("create parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1))
        .build();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(file, people().schema(), Some(props)).expect("writer");
    w.write(&people()).expect("write");
    w.close().expect("close");
    let wh = Warehouse::open(&src).await.expect("open");
    assert!(matches!(wh.loaded[0].1, super::Rows::Parquet { .. }));
    assert_eq!(wh.row_count("people").expect("count"), people().num_rows());
    let in_order = wh.table_in_source_order("people").expect("in order");
    assert_eq!(
        column_texts(&in_order, "Name"),
        column_texts(&people(), "Name")
    );
    let batches = wh
        .sql("SELECT COUNT(*) AS n FROM \"people\" WHERE \"pid\" > 0")
        .await
        .expect("query");
    let n = numeric_value(batches[0].column(0).as_ref(), 0).expect("a count");
    assert_eq!(n as usize, people().num_rows());
    // The queries read the file again: a file replaced since open is refused.
    wh.unchanged().expect("nothing changed yet");
    write_parquet_file(&path, &people().slice(0, 1));
    let err = wh.unchanged().expect_err("the file was replaced");
    assert!(
        err.to_string().contains("changed while the run read it"),
        "{err}"
    );
}

/// Concatenating a column at a time gives what `concat_batches` gives, for several batches,
/// one, or none.
#[test]
fn concatenating_by_column_equals_concatenating_batches() {
    let all = people();
    let schema = all.schema();
    let pieces = vec![
        all.slice(0, 1),
        all.slice(1, 0),
        all.slice(1, all.num_rows() - 1),
    ];
    let expected = arrow::compute::concat_batches(&schema, &pieces).expect("concat");
    assert_eq!(concat_owned(&schema, pieces).expect("by column"), expected);
    assert_eq!(concat_owned(&schema, vec![all.clone()]).expect("one"), all);
    let none = concat_owned(&schema, Vec::new()).expect("none");
    assert_eq!((none.num_rows(), none.schema()), (0, schema));
}

/// Every row of `table` as rendered text, one line a row, sorted: a query promises no order.
async fn query_rows(wh: &Warehouse, table: &str) -> Vec<String> {
    let batches = wh
        .sql(&format!("SELECT * FROM {}", quote_ident(table)))
        .await
        .expect("query");
    let mut rows = rendered_rows(&batches);
    rows.sort();
    rows
}

fn rendered_rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut rows = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = b
                .columns()
                .iter()
                .map(|c| render_value(c.as_ref(), r).unwrap_or_else(|| "NULL".into()))
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

/// A SQLite table and a CSV file are read again by every query, not held: counted at open,
/// the same values by a query (on several partitions) as by a scan in source order, and a
/// file changed since open refused.
#[tokio::test]
async fn sqlite_and_csv_tables_are_streamed_not_loaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("streamed.sqlite");
    let conn = Connection::open(&db).expect("create db");
    // Rowids over several pieces; text, numbers and NULL in one column; a text BLOB.
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v, w REAL);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
         INSERT INTO t SELECT i * 97, CASE i % 4 WHEN 0 THEN NULL WHEN 1 THEN i WHEN 2 THEN 'x' || i ELSE i * 0.5 END, i / 3.0 FROM n;
         INSERT INTO t VALUES (900000, CAST('blob text' AS BLOB), NULL);",
    )
    .expect("fill db");
    drop(conn);
    let wh = Warehouse::open(&db).await.expect("open sqlite");
    assert!(matches!(wh.loaded[0].1, super::Rows::Read { .. }));
    assert_eq!(wh.row_count("t").expect("count"), 3001);
    let in_order = wh.table_in_source_order("t").expect("in order");
    let ids = column_texts(&in_order, "id");
    assert_eq!(ids.first(), Some(&Some("97".to_string())));
    assert_eq!(ids.last(), Some(&Some("900000".to_string())));
    let mut expected = rendered_rows(std::slice::from_ref(&in_order));
    expected.sort();
    assert_eq!(query_rows(&wh, "t").await, expected);
    let n = wh
        .sql("SELECT COUNT(*) FROM \"t\" WHERE \"w\" IS NULL")
        .await
        .expect("count");
    assert_eq!(numeric_value(n[0].column(0).as_ref(), 0), Some(1.0));
    // A projection reads only its columns, in table order.
    let some: Vec<RecordBatch> = wh
        .batches_in_source_order("t", &s(&["w", "id"]))
        .expect("scan")
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(some[0].schema().field(0).name(), "id");
    assert_eq!(some.iter().map(RecordBatch::num_rows).sum::<usize>(), 3001);
    wh.unchanged().expect("nothing changed yet");
    let conn = Connection::open(&db).expect("writer");
    conn.execute("DELETE FROM t WHERE id = 97", [])
        .expect("delete");
    drop(conn);
    let err = wh.unchanged().expect_err("the database changed");
    assert!(
        err.to_string().contains("changed while the run read it"),
        "{err}"
    );

    // CSV: quoted delimiters and line breaks, empty fields as NULL.
    let csv = dir.path().join("people.csv");
    std::fs::write(
        &csv,
        "id;name;age\n1;\"Ann; the first\";30\n2;\"Bo\nsecond line\";\n3;;41\n",
    )
    .expect("write csv");
    let options = SourceOptions {
        csv_delimiter: b';',
    };
    let wh = Warehouse::open_with(&csv, &options)
        .await
        .expect("open csv");
    assert!(matches!(wh.loaded[0].1, super::Rows::Read { .. }));
    assert_eq!(wh.row_count("people").expect("count"), 3);
    let in_order = wh.table_in_source_order("people").expect("in order");
    assert_eq!(
        column_texts(&in_order, "name"),
        texts(&[Some("Ann; the first"), Some("Bo\nsecond line"), None])
    );
    let mut expected = rendered_rows(std::slice::from_ref(&in_order));
    expected.sort();
    assert_eq!(query_rows(&wh, "people").await, expected);
    wh.unchanged().expect("nothing changed yet");
    std::fs::write(&csv, "id;name;age\n1;Ann;30\n").expect("rewrite csv");
    assert!(wh.unchanged().is_err(), "a rewritten CSV file is refused");
}

/// A CSV file with a malformed row fails at open, not in a later query.
#[tokio::test]
async fn a_malformed_csv_row_fails_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("ragged.csv");
    std::fs::write(&csv, "a,b\n1,2\n3,4,5\n").expect("write csv");
    let err = Warehouse::open(&csv).await.err().expect("ragged");
    assert!(matches!(err, WarehouseError::Csv { .. }), "{err}");
}

/// Once bounded, the queries' sorts spill within the pool and a join whose hash table would
/// pass it fails saying which option to give; the spill directory goes with its guard.
#[tokio::test]
async fn bounded_queries_spill_their_sorts_and_name_the_budget_when_a_join_cannot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    std::fs::create_dir(&src).expect("mkdir");
    // Twice the least pool's bytes of names a table, whatever the partition count.
    let partitions = rayon::current_num_threads();
    let filler = "x".repeat(200 * partitions);
    let mut text = String::from("id,name\n");
    for i in 0..150_000u64 {
        let n = i * 7919 % 150_000;
        text.push_str(&format!("{i},{n:06} {filler}\n"));
    }
    std::fs::write(src.join("a.csv"), &text).expect("write a");
    std::fs::write(src.join("b.csv"), &text).expect("write b");
    let mut wh = Warehouse::open(&src).await.expect("open");
    let target = dir.path().join("release");
    // The least pool, 16 MiB a partition, 10 MB of which the merge of a sort's spills
    // reserves.
    let spill = wh.bound_queries(&target, 0).expect("bound");
    let sorted = wh
        .sql("SELECT \"name\" FROM \"a\" ORDER BY \"name\"")
        .await
        .expect("a sort spills");
    assert_eq!(
        sorted.iter().map(RecordBatch::num_rows).sum::<usize>(),
        150_000
    );
    let first = column_texts(&sorted[0], "name")[0].clone();
    assert_eq!(first, Some(format!("000000 {filler}")));
    let err = wh
        .sql("SELECT COUNT(*) FROM \"a\" JOIN \"b\" ON \"a\".\"name\" = \"b\".\"name\"")
        .await
        .expect_err("the hash table passes the pool");
    assert!(matches!(err, WarehouseError::QueryMemory { .. }), "{err}");
    assert!(err.to_string().contains("--memory-budget"), "{err}");
    let hidden: Vec<String> = listing(dir.path())
        .into_iter()
        .filter(|n| n.ends_with(".spill"))
        .collect();
    assert_eq!(hidden.len(), 1, "{hidden:?}");
    drop(spill);
    assert!(listing(dir.path()).iter().all(|n| !n.ends_with(".spill")));
}

/// A streamed table reports its row count, so a join builds its hash table on the table of
/// keys (a shard's), not on the larger streamed child table, also where the keys are too
/// many to be collected whole on one side (DataFusion's 128 k rows): then only the row
/// counts decide the sides.
#[tokio::test]
async fn a_join_builds_on_the_keys_not_on_a_streamed_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("child.sqlite");
    let conn = Connection::open(&db).expect("create db");
    conn.execute_batch(
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
         INSERT INTO child SELECT i, i / 2 FROM n;",
    )
    .expect("fill db");
    drop(conn);
    let wh = Warehouse::open(&db).await.expect("open");
    let keys = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from_iter_values(0..200_000))],
    )
    .expect("keys");
    let _keys = wh.temporary("keys", keys).expect("register");
    for join in ["JOIN", "LEFT JOIN"] {
        let plan = wh
            .sql(&format!(
                "EXPLAIN SELECT s.\"id\" FROM \"child\" s {join} \"keys\" k ON s.\"parent\" = k.\"k\""
            ))
            .await
            .expect("explain");
        let text = rendered_rows(&plan).join("\n");
        let physical = &text[text.find("HashJoinExec").expect("a hash join")..];
        // The build side is the join's first input.
        let build = physical.find("DataSourceExec").expect("the keys' scan");
        let probe = physical.find("SourceScanExec").expect("the child's scan");
        assert!(build < probe, "{join} builds on the child:\n{text}");
    }
}
