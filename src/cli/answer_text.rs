//! The pieces of a negotiation answer that read the same wherever it is shown: a node as
//! `[2,0,1]` and the child rows an answer suppresses. `negotiate` and `explore` both print
//! them, and both import them from here, so neither command imports the other's printing.

use relanon::pipeline::negotiate::AnswerJson;

/// A node as users see it: `[2,0,1]`.
pub fn node(levels: &[u16]) -> String {
    let l: Vec<String> = levels.iter().map(u16::to_string).collect();
    format!("[{}]", l.join(","))
}

/// The child rows an answer suppresses, `24 payment, 18 rental` (empty for one table).
pub fn child_rows(x: &AnswerJson) -> String {
    let r: Vec<String> = x
        .suppressed
        .rows
        .iter()
        .map(|(t, n)| format!("{n} {t}"))
        .collect();
    r.join(", ")
}
