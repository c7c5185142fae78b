//! 002 Ch. 3-4 on UCI Adult (`relanon experiment negotiation`): the annotated lattice of the
//! thesis's QI sets (its attribute order, |QI| = 3 to 6) with ARX's hierarchies, its build
//! time, and the thesis's request grid (Table 4.3: k, the top acceptable node, MaxSupp, one
//! varied at a time around the defaults) answered over it, beside the thesis's answers.
//!
//! The thesis's hierarchies (after FuWY05) are lost; ARX's have fewer levels (Workclass 3
//! against 4, Race 2 against 3, Education 4 against 5, Marital status 3 against 4), so its
//! level vectors are mapped by clamping each level to the ARX column's top, and answers
//! differ where the hierarchies do.

use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::pipeline::negotiate::{
    answer, build, compute_nodes, top_acceptable, AnswerJson, Answered, Ask, Built,
};
use crate::pipeline::Request;
use crate::progress::Progress;

/// The thesis's attribute order (l.713) with each attribute's ARX column and file.
const ATTRIBUTES: [(&str, &str); 6] = [
    ("age", "age"),
    ("workclass", "workclass"),
    ("race", "race"),
    ("occupation", "occupation"),
    ("education", "education"),
    ("marital-status", "marital-status"),
];

/// The other columns of the ARX file, published unchanged in this experiment (nothing is
/// released: only the lattice is built).
const OTHERS: [&str; 3] = ["sex", "native-country", "salary-class"];

/// One request of Table 4.3 and the thesis's answer to it (Ch. 4 result panels, compiled in
/// the spec's Sec. 5.3): (|QI|, varied, k, MaxSupp, h as the thesis writes it, thesis ms,
/// thesis answer).
type Request4 = (
    usize,
    &'static str,
    u32,
    u64,
    &'static str,
    &'static str,
    &'static str,
);

const REQUESTS: [Request4; 28] = [
    (3, "k", 3, 321, "211", "4.5", "e 100/125"),
    (3, "k", 10, 321, "211", "3.5", "e 110/170"),
    (3, "k", 50, 321, "211", "1.0", "e 211/251"),
    (3, "h", 10, 321, "101", "1.0", "e 101/257"),
    (3, "h", 10, 321, "212", "6.5", "e 110/170"),
    (3, "MaxSupp", 10, 32, "211", "", "R1 55, R2 310/28, R3 7/31"),
    (3, "MaxSupp", 10, 3216, "211", "", "e 000/1921"),
    (4, "k", 3, 321, "2011", "2.0", "e 1011/283"),
    (
        4,
        "k",
        10,
        321,
        "2011",
        "2.0",
        "R1 2011/655, R2 1210/170, R3 5/301",
    ),
    (
        4,
        "k",
        50,
        321,
        "2011",
        "2.8",
        "R1 4077, R2 1212/137, R3 5/301",
    ),
    (4, "h", 10, 321, "1001", "2.5", "R1 2349, R2 1210/170, -"),
    (4, "h", 10, 321, "2112", "5.5", "e 1111/285"),
    (4, "MaxSupp", 10, 32, "2011", "", "R1 655, R2 3210/28, -"),
    (4, "MaxSupp", 10, 3216, "2011", "", "e 2000/2110"),
    (5, "k", 3, 321, "21012", "3.0", "R1 656, R2 10212/108, -"),
    (5, "k", 10, 321, "21012", "3.0", "R1 2533, R2 10222/230, -"),
    (5, "k", 50, 321, "21012", "2.5", "R1 9214, R2 40122/169, -"),
    (5, "h", 10, 321, "11001", "5.5", "R1 8169, R2 10222/230, -"),
    (
        5,
        "h",
        10,
        321,
        "22112",
        "2.5",
        "R1 369, R2 40112/60, R3 9/315",
    ),
    (5, "MaxSupp", 10, 32, "21012", "", "R1 2533, R2 40212/14, -"),
    (5, "MaxSupp", 10, 3216, "21012", "", "e 21012/2533"),
    (6, "k", 3, 321, "211012", "8", "R1 1611, R2 400202/155, -"),
    (6, "k", 10, 321, "211012", "6", "R1 5362, R2 401211/285, -"),
    (6, "k", 50, 321, "211012", "6", "R1 15106, R2 401222/137, -"),
    (
        6,
        "h",
        10,
        321,
        "111001",
        "8.5",
        "R1 12823, R2 401211/285, -",
    ),
    (
        6,
        "h",
        10,
        321,
        "222112",
        "4.5",
        "R1 712, R2 401212/54, R3 5/298",
    ),
    (
        6,
        "MaxSupp",
        10,
        32,
        "211012",
        "",
        "R1 5362, R2 401222/21, -",
    ),
    (
        6,
        "MaxSupp",
        10,
        3216,
        "211012",
        "",
        "R1 5362, R2 400210/1222, R3 5/2915",
    ),
];

/// The partial lattice's share (the thesis's default, Sec. 5.4).
const PARTIAL: f64 = 0.05;

/// One QI set's lattice.
#[derive(Debug, Clone, Serialize)]
pub struct LatticeRow {
    pub qi: usize,
    pub nodes: usize,
    /// The thesis's node count with its hierarchies (D9).
    pub thesis_nodes: usize,
    /// Reading the source, planning and annotating every node.
    pub build_seconds: f64,
    /// The 5% partial lattice: nodes computed and the same whole build.
    pub partial_nodes: usize,
    pub partial_build_seconds: f64,
    /// Per height, the least entities any node of it suppresses at k = 3, 10, 50.
    pub min_by_height: Vec<(u32, Vec<u64>)>,
}

/// One request and its answers.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRow {
    pub qi: usize,
    pub varied: String,
    pub k: u32,
    pub max_suppression: u64,
    pub thesis_h: String,
    /// `h` on ARX's levels, in the thesis's attribute order.
    pub h: String,
    pub answer: String,
    pub microseconds: u64,
    pub visited: usize,
    pub thesis_ms: String,
    pub thesis_answer: String,
    /// The answers over the 5% partial lattice, and whether they are the full lattice's.
    pub partial_answer: String,
    pub partial_same: bool,
    /// The same with the top acceptable node computed at query time (Fig. 5.23).
    pub partial_top_answer: String,
    pub partial_top_same: bool,
}

/// Builds each QI set's lattice from the ARX files in `data` and answers the grid.
pub async fn negotiation(
    data: &Path,
    say: &dyn Fn(&str),
    progress: &Progress,
) -> Result<(Vec<LatticeRow>, Vec<RequestRow>)> {
    if !data.join("adult.csv").is_file() {
        bail!(
            "'{}' has no adult.csv: give --data the directory holding UCI Adult as ARX distributes it (adult.csv and adult_hierarchy_*.csv)",
            data.display()
        );
    }
    let thesis_levels = [5usize, 4, 3, 3, 5, 4];
    let mut lattices = Vec::new();
    let mut requests = Vec::new();
    for qi in 3..=6 {
        say(&format!("|QI| = {qi}: annotating the lattice"));
        let req = Request {
            text: declarations(qi),
            base: data.to_path_buf(),
            origin: format!("the |QI| = {qi} declarations"),
            ..Request::default()
        };
        let built = build(&req, None, progress).await?;
        say(&format!("|QI| = {qi}: annotating 5% of it"));
        let part = build(&req, Some(PARTIAL), progress).await?;
        let a = &built.lattice;
        // Lattice columns in the thesis's order.
        let order: Vec<usize> = ATTRIBUTES[..qi]
            .iter()
            .map(|(col, _)| {
                built
                    .meta
                    .columns
                    .iter()
                    .position(|c| c.name == format!("adult.{col}"))
                    .expect("every declared QI is a lattice column")
            })
            .collect();
        let mut min_by_height: Vec<(u32, Vec<u64>)> = Vec::new();
        for index in 0..a.nodes() {
            let height: u32 = a.levels(index).iter().map(|&l| l as u32).sum();
            while min_by_height.len() <= height as usize {
                min_by_height.push((min_by_height.len() as u32, vec![u64::MAX; 3]));
            }
            let h = a.size.get(index);
            for (m, k) in min_by_height[height as usize].1.iter_mut().zip([3, 10, 50]) {
                *m = (*m).min(h.entities(k));
            }
        }
        lattices.push(LatticeRow {
            qi,
            nodes: a.nodes(),
            thesis_nodes: thesis_levels[..qi].iter().product(),
            build_seconds: built.meta.build_seconds,
            partial_nodes: part
                .lattice
                .computed
                .as_ref()
                .map_or(0, |c| c.iter().filter(|&&x| x).count()),
            partial_build_seconds: part.meta.build_seconds,
            min_by_height,
        });
        for &(q, varied, k, supp, h, ms, thesis) in REQUESTS.iter().filter(|r| r.0 == qi) {
            let levels: Vec<u16> = h
                .chars()
                .zip(&order)
                .map(|(d, &c)| {
                    let d = d.to_digit(10).expect("the grid's levels are digits") as u16;
                    d.min(a.heights[c])
                })
                .collect();
            let ask = Ask {
                k: Some(k),
                l: None,
                max_suppression: Some(supp.to_string()),
                max_levels: ATTRIBUTES[..qi]
                    .iter()
                    .zip(&levels)
                    .map(|((col, _), l)| format!("adult.{col}={l}"))
                    .collect(),
            };
            let answered = answer(&built, &ask)?;
            let partial = compact(&answer(&part, &ask)?, &order);
            // Fig. 5.23: the top acceptable node computed at query time.
            let mut with_top = Built {
                lattice: part.lattice.clone(),
                meta: part.meta.clone(),
            };
            let top = top_acceptable(&with_top, &ask).expect("the grid's requests are valid");
            compute_nodes(&mut with_top, &req, &[top], progress).await?;
            let partial_top = compact(&answer(&with_top, &ask)?, &order);
            let full = compact(&answered, &order);
            requests.push(RequestRow {
                qi: q,
                varied: varied.to_string(),
                k,
                max_suppression: supp,
                thesis_h: h.to_string(),
                h: digits(&levels),
                partial_same: partial == full,
                partial_answer: partial,
                partial_top_same: partial_top == full,
                partial_top_answer: partial_top,
                answer: full,
                microseconds: answered.stats.microseconds,
                visited: answered.stats.visited,
                thesis_ms: ms.to_string(),
                thesis_answer: thesis.to_string(),
            });
        }
    }
    Ok((lattices, requests))
}

/// The declarations of the first `qi` attributes as QIs over the ARX files.
fn declarations(qi: usize) -> String {
    let mut text = String::from("SET source = 'adult.csv';\nSET csv_delimiter = ';';\n");
    for (col, file) in &ATTRIBUTES[..qi] {
        text += &format!("CREATE HIERARCHY \"{col}_h\" FROM CSV 'adult_hierarchy_{file}.csv';\n");
    }
    text += "CREATE ENTITY person ON adult;\n";
    for (i, (col, _)) in ATTRIBUTES.iter().enumerate() {
        text += &if i < qi {
            format!("LABEL COLUMN adult.\"{col}\" AS QUASI IDENTIFIER USING \"{col}_h\";\n")
        } else {
            format!("LABEL COLUMN adult.\"{col}\" AS INSENSITIVE;\n")
        };
    }
    for col in OTHERS {
        text += &format!("LABEL COLUMN adult.\"{col}\" AS INSENSITIVE;\n");
    }
    text + "ANONYMIZE person WITH (k = 10, algorithm = 'lattice');\n"
}

fn same_or(same: bool, answer: &str) -> String {
    if same {
        "same".to_string()
    } else {
        answer.to_string()
    }
}

fn digits(levels: &[u16]) -> String {
    levels.iter().map(u16::to_string).collect()
}

/// Answers in the thesis's notation: `e LEVELS/SUPPRESSED`, or `R1 LEVELS/SUPPRESSED, R2
/// LEVELS/SUPPRESSED, R3 k/SUPPRESSED` with `-` for none; levels in the thesis's order.
fn compact(a: &Answered, order: &[usize]) -> String {
    let node = |x: &AnswerJson| {
        let levels: Vec<u16> = order.iter().map(|&c| x.levels[c]).collect();
        format!("{}/{}", digits(&levels), x.suppressed.entities)
    };
    if let Some(e) = &a.exact {
        return format!("e {}", node(e));
    }
    let r = &a.relaxations;
    let one = |i: usize, f: &dyn Fn(&AnswerJson) -> String| {
        r[i].answer
            .as_ref()
            .map_or("-".to_string(), |x| format!("R{} {}", i + 1, f(x)))
    };
    [
        one(0, &node),
        one(1, &node),
        one(2, &|x: &AnswerJson| {
            format!("{}/{}", x.value, x.suppressed.entities)
        }),
    ]
    .join(", ")
}

/// The two tables as Markdown.
pub fn markdown(lattices: &[LatticeRow], requests: &[RequestRow]) -> String {
    let mut out = String::from(
        "| \\|QI\\| | nodes (thesis) | build s | 5%: nodes, build s | least suppressed per height, k = 3 / 10 / 50 |\n| --- | --- | --- | --- | --- |\n",
    );
    for l in lattices {
        let per = |i: usize| {
            l.min_by_height
                .iter()
                .map(|(_, m)| m[i].to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out += &format!(
            "| {} | {} ({}) | {:.2} | {}, {:.2} | {} / {} / {} |\n",
            l.qi,
            l.nodes,
            l.thesis_nodes,
            l.build_seconds,
            l.partial_nodes,
            l.partial_build_seconds,
            per(0),
            per(1),
            per(2)
        );
    }
    out += "\n| \\|QI\\| | varied | k | MaxSupp | h (thesis -> ARX) | relanon | ms | visited | thesis | thesis ms | relanon, 5% partial | 5% + top node |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for r in requests {
        out += &format!(
            "| {} | {} | {} | {} | {} -> {} | {} | {:.2} | {} | {} | {} | {} | {} |\n",
            r.qi,
            r.varied,
            r.k,
            r.max_suppression,
            r.thesis_h,
            r.h,
            r.answer,
            r.microseconds as f64 / 1000.0,
            r.visited,
            r.thesis_answer,
            r.thesis_ms,
            same_or(r.partial_same, &r.partial_answer),
            same_or(r.partial_top_same, &r.partial_top_answer),
        );
    }
    let same = requests.iter().filter(|r| r.partial_same).count();
    let top = requests.iter().filter(|r| r.partial_top_same).count();
    out += &format!(
        "\nOver the 5% partial lattice, {same} of {} requests get the full lattice's answers; {top} with the top acceptable node computed at query time.\n",
        requests.len()
    );
    out
}
