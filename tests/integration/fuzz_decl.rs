//! Random declarations, valid and corrupted, from the grammar of docs/declarations.md, through
//! the parser, the planner (against the Table II warehouse) and the algorithm registry: each
//! ends in a plan or in an error, never a panic. CI runs 2,000 cases; `scripts/soak.sh` runs a
//! million (`RELANON_DECL_CASES`).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::common::*;
use crate::properties::cases;

/// Names a declarations file may use: the warehouse's own, other cases, quoted, spaced,
/// reserved, non-ASCII, empty, and nonsense.
const IDENTS: &[&str] = &[
    "students",
    "courses",
    "books",
    "sid",
    "scid",
    "bid",
    "course",
    "grade",
    "gpa",
    "book",
    "price",
    "Students",
    "\"students\"",
    "\"Courses\"",
    "student",
    "course_h",
    "book_h",
    "x",
    "\"a b\"",
    "\"ü\"",
    "select",
    "\"\"",
    "t.c",
    "*",
    "\"x\"\"y\"",
];

const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "1.5",
    "1e23",
    "1e308",
    "99999999999999999999",
    "-0",
    "0.3",
    "'a'",
    "''",
    "'it''s'",
    "'x\ny'",
    "'*'",
    "'2021-02-30'",
    "'table2'",
    "'release.sqlite'",
    "'lsap'",
    "'grd'",
    "'miracle'",
    "'clustree'",
    "'topdown'",
    "'l-diversity'",
    "'k-anonymity'",
    "'anatomy'",
    "'t-t'",
    "'v-v'",
    "'1/3'",
    "'2/1'",
    "'preserve'",
    "'drop'",
    "'\u{feff}'",
    "NULL",
    "TRUE",
];

/// Every option name relanon knows (shared and each algorithm's), an alias, and nonsense.
fn options() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = relanon::plan::SHARED_OPTIONS.to_vec();
    for spec in relanon::algo::ALGORITHMS {
        names.extend(spec.options.iter().map(|o| o.name));
    }
    names.extend(["th", "kk", ""]);
    names
}

const ROLES: &[&str] = &[
    "IDENTIFIER",
    "SENSITIVE",
    "INSENSITIVE",
    "QUASI IDENTIFIER USING course_h",
    "QUASI IDENTIFIER USING book_h",
    "QUASI IDENTIFIER USING x",
    "SENSITIVE BUCKETS (1, 2, 3)",
    "SENSITIVE BUCKETS (3, 1)",
    "QUASI IDENTIFIER",
    "BANANA",
];

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(pool)
}

/// One statement of the grammar, its parts drawn from the pools.
fn statement() -> impl Strategy<Value = String> {
    let id = || pick(IDENTS);
    let v = || pick(VALUES);
    prop_oneof![
        (
            pick(&[
                "source",
                "target",
                "orphans",
                "keys",
                "csv_delimiter",
                "seed",
                "x"
            ]),
            v()
        )
            .prop_map(|(n, v)| format!("SET {n} = {v};")),
        (id(), v(), v(), v(), v()).prop_map(|(h, a, b, c, d)| format!(
            "CREATE HIERARCHY {h} AS VALUES ({a}, {b}), ({c}, {d});"
        )),
        (id(), v(), v(), prop::option::of((v(), v()))).prop_map(|(h, a, b, r)| {
            let range = r.map_or(String::new(), |(lo, hi)| format!(" BETWEEN {lo} AND {hi}"));
            format!("CREATE HIERARCHY {h} AS BANDS ({a}, {b}){range};")
        }),
        (
            id(),
            pick(&["month", "quarter", "year", "decade", "day", "x"]),
            pick(&["year", "month", ""])
        )
            .prop_map(|(h, a, b)| format!("CREATE HIERARCHY {h} AS DATE PARTS ({a}, {b});")),
        (id(), id(), id(), id())
            .prop_map(|(h, a, b, t)| format!("CREATE HIERARCHY {h} AS SELECT {a}, {b} FROM {t};")),
        (id(), v()).prop_map(|(h, f)| format!("CREATE HIERARCHY {h} FROM CSV {f};")),
        (id(), id(), id()).prop_map(|(e, t, k)| format!("CREATE ENTITY {e} ON {t} ({k});")),
        (id(), id()).prop_map(|(t, c)| format!("ALTER TABLE {t} ADD PRIMARY KEY ({c});")),
        (id(), id(), id(), id()).prop_map(|(t, c, r, rc)| {
            format!("ALTER TABLE {t} ADD FOREIGN KEY ({c}) REFERENCES {r} ({rc});")
        }),
        (id(), id()).prop_map(|(t, c)| format!("ALTER TABLE {t} DROP FOREIGN KEY ({c});")),
        (id(), id(), pick(ROLES)).prop_map(|(t, c, r)| format!("LABEL COLUMN {t}.{c} AS {r};")),
        (
            id(),
            pick(&[
                "AS DIMENSION",
                "DEFAULT INSENSITIVE",
                "DEFAULT SENSITIVE",
                "AS"
            ])
        )
            .prop_map(|(t, r)| format!("LABEL TABLE {t} {r};")),
        (
            id(),
            prop::collection::vec((prop::sample::select(options()), v()), 0..4)
        )
            .prop_map(|(e, opts)| {
                let list: Vec<String> = opts.iter().map(|(o, v)| format!("{o} = {v}")).collect();
                format!("ANONYMIZE {e} WITH ({});", list.join(", "))
            }),
        (id(), id(), id()).prop_map(|(n, c, t)| format!("CREATE VIEW {n} AS SELECT {c} FROM {t};")),
        (
            id(),
            id(),
            id(),
            pick(&["", " = 'A'", " = 3", " IS NULL", " = x", " IS"]),
            v(),
            v()
        )
            .prop_map(|(n, t, c, value, m, p)| {
                format!("CREATE RULE {n} ON {t}.{c}{value} WITH (m = {m}, p = {p});")
            }),
        (v(), pick(&[" PERCENT OF", " PERCENT", " OF", ""]), id())
            .prop_map(|(n, words, t)| format!("KEEP {n}{words} {t};")),
    ]
}

/// A corruption of a declarations text: a byte range cut out, a token put in, the text cut
/// short, or a statement doubled.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Cut(usize, usize),
    Insert(usize, &'static str),
    Truncate(usize),
    Double(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => Just(Damage::None),
        1 => (any::<usize>(), 1usize..20).prop_map(|(a, n)| Damage::Cut(a, n)),
        1 => (any::<usize>(), pick(&["(", ")", ";", "'", "\"", ",", "--", "/*", "AS", "\u{feff}", "\0", "é"]))
            .prop_map(|(a, t)| Damage::Insert(a, t)),
        1 => any::<usize>().prop_map(Damage::Truncate),
        1 => any::<usize>().prop_map(Damage::Double),
    ]
}

/// `text` with `d` applied, cutting only at character boundaries.
fn apply(text: &str, d: &Damage) -> String {
    let at = |i: usize| {
        let mut i = i % (text.len() + 1);
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    match *d {
        Damage::None => text.to_string(),
        Damage::Cut(a, n) => {
            let (a, b) = (at(a), at(a.saturating_add(n)).max(at(a)));
            format!("{}{}", &text[..a], &text[b..])
        }
        Damage::Insert(a, t) => {
            let a = at(a);
            format!("{}{t}{}", &text[..a], &text[a..])
        }
        Damage::Truncate(a) => text[..at(a)].to_string(),
        Damage::Double(i) => {
            let stmts: Vec<&str> = text.split_inclusive(';').collect();
            match stmts.len() {
                0 => text.to_string(),
                n => format!("{text}\n{}", stmts[i % n]),
            }
        }
    }
}

/// Table II's declarations with source and target where the fixture is.
fn base() -> String {
    table2_text()
        .replace("SET source = 'table2';", "")
        .replace("SET target = 'release.sqlite';", "")
}

proptest! {
    #![proptest_config(Config { cases: cases("RELANON_DECL_CASES", 2000), rng_seed: RngSeed::Fixed(20261124), failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_declarations_end_in_a_plan_or_an_error_never_a_panic(
        keep_base in prop::bool::weighted(0.7),
        extra in prop::collection::vec(statement(), 0..6),
        hurt in damage(),
    ) {
        let mut text = if keep_base { base() } else { String::new() };
        for s in &extra {
            text.push('\n');
            text.push_str(s);
        }
        let text = apply(&text, &hurt);
        let Ok(policy) = relanon::decl::parse(&text) else {
            return Ok(());
        };
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        rt.block_on(async {
            let mut wh = relanon::warehouse::Warehouse::open(&fixture("table2"))
                .await
                .expect("the Table II fixture opens");
            if let Ok(plan) = relanon::plan::build(&policy, &mut wh, &fixture("table2")).await {
                let _ = relanon::algo::configure(&plan);
            }
        });
    }
}
