//! `relanon plan`: a dry run of the declarations, nothing written.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use relanon::budget::Budget;
use relanon::pipeline::{self, DryRun};

use super::{Declared, Overrides};

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    declared: Declared,
    #[command(flatten)]
    overrides: Overrides,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// The memory budget `anonymize` would be given (default: half this machine's memory):
    /// the plan says whether the family runs whole or in how many shards.
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<Budget>,
}

/// Prints what a run would do.
pub async fn plan(args: PlanArgs, quiet: bool) -> Result<ExitCode> {
    let mut req = args.declared.request()?;
    req.with = args.overrides.with;
    req.memory_budget = args.memory_budget;
    let dry = pipeline::dry_run(&req).await?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&dry)?);
    } else if !quiet {
        outln!("{}", describe(&dry));
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan as text: the family as a tree, then dimensions, left out, review, warnings.
fn describe(d: &DryRun) -> String {
    let mut out = format!(
        "entity {}: {} ({} entities, {} rows in the family)\n\nfamily:\n",
        d.entity, d.model, d.estimate.entities, d.estimate.vertices
    );
    for t in &d.tables {
        let depth = std::iter::successors(t.parent.as_deref(), |p| {
            d.tables
                .iter()
                .find(|x| x.name == *p)
                .and_then(|x| x.parent.as_deref())
        })
        .count();
        let indent = "  ".repeat(depth + 1);
        let fan = t.fan_out.map_or(String::new(), |(mean, most)| {
            format!(
                ", {mean:.1} per {} row on average, at most {most}",
                t.parent.as_deref().unwrap_or("")
            )
        });
        let keep = t.keep.map_or(String::new(), |p| {
            format!(
                "; KEEP {p}%: at least {} rows",
                (p * t.rows as f64 / 100.0).ceil()
            )
        });
        let at_most = t.at_most.map_or(String::new(), |n| {
            format!(
                "; at most {n} ({:.0}%) can be released",
                100.0 * n as f64 / t.rows.max(1) as f64
            )
        });
        out.push_str(&format!(
            "{indent}{} ({} rows{fan}{keep}{at_most})\n",
            t.name, t.rows
        ));
        for c in &t.columns {
            out.push_str(&format!("{indent}  - {}: {}\n", c.name, c.fate));
        }
    }
    if !d.dimensions.is_empty() {
        out.push_str("\nreleased beside it as dimensions:\n");
        for t in &d.dimensions {
            out.push_str(&format!("  {} ({} rows)\n", t.name, t.rows));
            for c in &t.columns {
                out.push_str(&format!("    - {}: {}\n", c.name, c.fate));
            }
        }
    }
    if !d.left_out.is_empty() {
        out.push_str(&format!("\nleft out: {}\n", d.left_out.join(", ")));
    }
    if !d.review.is_empty() {
        out.push_str(&format!(
            "\nstill marked for review ({}):\n",
            d.review.len()
        ));
        for r in &d.review {
            out.push_str(&format!("  {r}\n"));
        }
    }
    for w in &d.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    if !d.warnings.is_empty() {
        out.push('\n');
    }
    if let Some(layout) = &d.layout {
        out.push_str(&format!("\nrelease: {layout}\n"));
    }
    out.push_str(&format!(
        "\nalgorithm {}: expect {}\nmemory: {}\nnothing was written; run `relanon anonymize` with the same declarations to release",
        d.algorithm, d.estimate.time, d.estimate.memory
    ));
    out
}
