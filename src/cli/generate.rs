//! `relanon generate`: the seeded synthetic warehouses and TPC-H.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use relanon::warehouse::{write_parquet_streamed, write_staged, TargetKind};

use super::Generated;

#[derive(Args)]
pub struct GenerateArgs {
    #[arg(value_enum)]
    kind: Generated,
    /// Output: a .sqlite file or a directory for Parquet.
    #[arg(long)]
    out: PathBuf,
    /// Number of students (university, synthetic-s, synthetic-t).
    #[arg(long, default_value_t = 1000)]
    students: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// TPC-H scale factor (tpch only): 1 is 150 000 customers, 1.5 M orders, ~6 M line items.
    #[arg(long, default_value_t = 0.01)]
    sf: f64,
    #[arg(long)]
    overwrite: bool,
}

/// Writes the warehouse atomically and says where.
pub fn generate(args: GenerateArgs, quiet: bool) -> Result<ExitCode> {
    let (students, seed) = (args.students, args.seed);
    // TPC-H into Parquet is written batch by batch: SF 10 does not fit in memory whole.
    if matches!(args.kind, Generated::Tpch) && TargetKind::of(&args.out) == TargetKind::Parquet {
        let streams = relanon::generate::tpch_streams(args.sf)?;
        let path = write_parquet_streamed(&args.out, streams, args.overwrite)?.commit()?;
        if !quiet {
            outln!("wrote {}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let set = match args.kind {
        Generated::University => relanon::generate::university(students, seed),
        Generated::Table2 => relanon::generate::table2(),
        Generated::SyntheticS => relanon::generate::synthetic(students, seed, false),
        Generated::SyntheticT => relanon::generate::synthetic(students, seed, true),
        Generated::Tpch => relanon::generate::tpch(args.sf)?,
    };
    let path = write_staged(&args.out, &set, args.overwrite)?.commit()?;
    if !quiet {
        outln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
