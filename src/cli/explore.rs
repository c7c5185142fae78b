//! `relanon negotiate --explore`: the negotiation as a conversation on the terminal. Each
//! turn draws the lattice by height for the current request (how many nodes of each height
//! meet it, the least and most they suppress, where v_max, the answer and the relaxations
//! lie), then the answers, then reads one command. Answers come from
//! `pipeline::negotiate::answer`, the code `negotiate` prints: nothing is decided here.

use std::io::{BufRead, Write};

use anyhow::Result;
use relanon::algo::kernel::annotate::Measure;
use relanon::pipeline::negotiate::{answer, AnswerJson, Answered, Ask, Built};

use super::answer_text::{child_rows, node};

/// Width of a height's bar.
const BAR: usize = 32;

const HELP: &str = "commands:
  k N | l N              ask for k (or distinct l)
  supp N | supp P%       the most entities suppressed
  level COLUMN L         the highest level accepted for a column (L = any: unconstrained)
  adopt 1|2|3            take a relaxation as the new request
  open H                 the nodes of height H, least suppression first
  accept exact|1|2|3     the command that releases that answer
  history | undo | help | quit";

/// Runs the conversation over `input` until it ends or says quit.
pub fn explore(built: &Built, first: Ask, input: &mut dyn BufRead) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let mut history: Vec<(Ask, String)> = Vec::new();
    let mut ask = first;
    let mut answered = answer(built, &ask)?;
    writeln!(out, "{}\n", HELP)?;
    // Drawn again only when the request changed, not after a look into a height.
    let mut redraw = true;
    loop {
        if redraw {
            writeln!(out, "{}", draw(built, &answered))?;
            redraw = false;
        }
        write!(out, "negotiate> ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(());
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let next = match words.as_slice() {
            [] => continue,
            ["quit" | "exit" | "q"] => return Ok(()),
            ["help" | "?"] => {
                writeln!(out, "{HELP}")?;
                continue;
            }
            ["history"] => {
                for (i, (_, said)) in history.iter().enumerate() {
                    writeln!(out, "{:>3}  {said}", i + 1)?;
                }
                continue;
            }
            ["undo"] => match history.pop() {
                Some((before, _)) => before,
                None => {
                    writeln!(out, "nothing to undo")?;
                    continue;
                }
            },
            ["open", h] => {
                match h.parse::<u32>() {
                    Ok(h) => writeln!(out, "{}", open(built, &answered, h))?,
                    Err(_) => writeln!(out, "open H: H is a height, a whole number")?,
                }
                continue;
            }
            ["accept", which] => {
                match chosen(&answered, which) {
                    Some(a) => writeln!(
                        out,
                        "release it with:\n  relanon anonymize <declarations> --with \"{}\"\n(or run negotiate with the same request and --accept {which})",
                        a.with
                    )?,
                    None => writeln!(out, "no such answer to this request")?,
                }
                continue;
            }
            _ => match change(&ask, &answered, &words) {
                Ok(next) => next,
                Err(e) => {
                    writeln!(out, "{e}")?;
                    continue;
                }
            },
        };
        // An undo restores without a new history entry; other changes are logged.
        let undoing = words == ["undo"];
        match answer(built, &next) {
            Ok(a) => {
                if !undoing {
                    history.push((ask.clone(), summary(&answered)));
                }
                ask = next;
                answered = a;
                redraw = true;
            }
            Err(e) => writeln!(out, "refused: {e:#}")?,
        }
    }
}

/// The request after a command that changes it.
fn change(ask: &Ask, answered: &Answered, words: &[&str]) -> Result<Ask, String> {
    let mut next = ask.clone();
    match words {
        ["k", n] => {
            next.k = Some(n.parse().map_err(|_| "k N: N is a whole number")?);
            next.l = None;
        }
        ["l", n] => {
            next.l = Some(n.parse().map_err(|_| "l N: N is a whole number")?);
            next.k = None;
        }
        ["supp" | "suppression", v] => next.max_suppression = Some((*v).to_string()),
        ["level", column, level] => {
            next.max_levels.retain(|m| {
                m.split_once('=')
                    .is_none_or(|(c, _)| !c.trim().eq_ignore_ascii_case(column))
            });
            if *level != "any" {
                next.max_levels.push(format!("{column}={level}"));
            }
        }
        ["adopt", which] => {
            let i = match *which {
                "1" => 0,
                "2" => 1,
                "3" => 2,
                _ => return Err("adopt 1|2|3".into()),
            };
            let r = answered
                .relaxations
                .get(i)
                .and_then(|r| r.answer.as_ref())
                .ok_or("there is no such relaxation to adopt")?;
            match i {
                0 => next.max_suppression = Some(r.suppressed.entities.to_string()),
                1 => {
                    next.max_levels = r
                        .by_column
                        .iter()
                        .map(|(c, l)| format!("{c}={l}"))
                        .collect()
                }
                _ => {
                    if answered.request.measure == "k" {
                        next.k = Some(r.value);
                    } else {
                        next.l = Some(r.value);
                    }
                }
            }
        }
        _ => return Err(format!("unknown command '{}'; type help", words.join(" "))),
    }
    Ok(next)
}

/// The answer `accept` names.
fn chosen<'a>(a: &'a Answered, which: &str) -> Option<&'a AnswerJson> {
    match which {
        "exact" | "0" => a.exact.as_ref(),
        "1" | "2" | "3" if a.exact.is_none() => {
            let i: usize = which.parse().ok()?;
            a.relaxations.get(i - 1)?.answer.as_ref()
        }
        _ => None,
    }
}

/// One line for the history.
fn summary(a: &Answered) -> String {
    let q = &a.request;
    let said = match &a.exact {
        Some(e) => format!(
            "exact {} {} suppressed",
            node(&e.levels),
            e.suppressed.entities
        ),
        None => "no exact answer".to_string(),
    };
    format!(
        "{} >= {}, suppress <= {}, top node {}: {said}",
        q.measure,
        q.value,
        q.max_suppression,
        node(&a.v_max.levels)
    )
}

/// Entities node `index` suppresses at the request's k (or l).
fn suppressed(built: &Built, a: &Answered, index: usize) -> u64 {
    let measure = if a.request.measure == "k" {
        Measure::Size
    } else {
        Measure::Distinct
    };
    let lat = &built.lattice;
    lat.histogram(measure, index)
        .map_or(lat.entities, |x| x.entities(a.request.value))
}

/// The lattice by height for the current request, and the answers.
fn draw(built: &Built, a: &Answered) -> String {
    let lat = &built.lattice;
    let q = &a.request;
    let top: usize = lat.heights.iter().map(|&h| h as usize).sum();
    // Per height: nodes, meeting, least and most suppressed.
    let mut rows = vec![(0usize, 0usize, u64::MAX, 0u64); top + 1];
    // A partial lattice's uncomputed nodes are left out of every count.
    for index in (0..lat.nodes()).filter(|&i| lat.is_computed(i)) {
        let h: usize = lat.levels(index).iter().map(|&l| l as usize).sum();
        let s = suppressed(built, a, index);
        let row = &mut rows[h];
        row.0 += 1;
        if s <= q.max_suppression && s < lat.entities {
            row.1 += 1;
        }
        row.2 = row.2.min(s);
        row.3 = row.3.max(s);
    }
    let mut marks: Vec<Vec<String>> = vec![Vec::new(); top + 1];
    marks[a.v_max.height as usize].push("v = top acceptable".into());
    if let Some(e) = &a.exact {
        marks[e.height as usize].push("E = exact".into());
    }
    for (i, r) in a.relaxations.iter().enumerate() {
        if let Some(x) = &r.answer {
            marks[x.height as usize].push(format!("{} = {}", i + 1, r.relaxes));
        }
    }
    let mut out = format!(
        "\n{} >= {}, suppress <= {} of {} entities; '#' share of a height's {}nodes that meet it\n height  nodes   meet      least       most\n",
        q.measure,
        q.value,
        q.max_suppression,
        q.entities,
        if a.lattice.partial.is_some() { "computed " } else { "" }
    );
    for (h, &(nodes, meet, least, most)) in rows.iter().enumerate() {
        let filled = (meet * BAR).div_ceil(nodes.max(1));
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(BAR - filled));
        out += &format!(
            " {h:>6} {nodes:>6} {meet:>6} {least:>10} {most:>10}  {bar}  {}\n",
            marks[h].join(", ")
        );
    }
    out += &answers(a);
    out
}

/// The answers, one line each.
fn answers(a: &Answered) -> String {
    let line = |x: &AnswerJson| {
        let rows = child_rows(x);
        let rows = if rows.is_empty() {
            String::new()
        } else {
            format!(" (rows: {rows})")
        };
        format!(
            "{} height {}, {} {}, {} suppressed{rows}",
            node(&x.levels),
            x.height,
            x.measure,
            x.value,
            x.suppressed.entities
        )
    };
    let mut out = format!("top acceptable node {}\n", line(&a.v_max));
    match &a.exact {
        Some(e) => out += &format!("E exact       {}\n", line(e)),
        None => {
            for (i, r) in a.relaxations.iter().enumerate() {
                out += &match &r.answer {
                    Some(x) => {
                        format!("{} {:<11} {}  {}\n", i + 1, r.relaxes, line(x), x.deviation)
                    }
                    None => format!(
                        "{} {:<11} none: {}\n",
                        i + 1,
                        r.relaxes,
                        r.reason.as_deref().unwrap_or("")
                    ),
                }
            }
        }
    }
    out
}

/// The nodes of height `h`, least suppression first (the first 20).
fn open(built: &Built, a: &Answered, h: u32) -> String {
    let lat = &built.lattice;
    let q = &a.request;
    let mut nodes: Vec<(u64, Vec<u16>)> = (0..lat.nodes())
        .filter(|&i| lat.is_computed(i))
        .filter_map(|i| {
            let levels = lat.levels(i);
            (levels.iter().map(|&l| l as u32).sum::<u32>() == h)
                .then(|| (suppressed(built, a, i), levels))
        })
        .collect();
    if nodes.is_empty() {
        return format!("no node has height {h}");
    }
    nodes.sort();
    let mut out = format!(
        "height {h}: {} nodes; levels in the order {}\n",
        nodes.len(),
        a.lattice.columns.join(", ")
    );
    for (s, levels) in nodes.iter().take(20) {
        let meets = *s <= q.max_suppression && *s < lat.entities;
        out += &format!(
            "  {} {s} suppressed{}\n",
            node(levels),
            if meets { "  meets" } else { "" }
        );
    }
    if nodes.len() > 20 {
        out += &format!("  ... {} more\n", nodes.len() - 20);
    }
    out
}
