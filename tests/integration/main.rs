//! Integration tests: the `relanon` binary run on fixtures, and property tests over random
//! snowflake warehouses. One test crate with modules keeps the link cost to one binary.
//!
//! - `table2`, `university`, `adult`, `tpch`: the papers' and the bundled workloads, from
//!   SQLite and Parquet, verified standalone, tampering caught (Adult skipped without the data
//!   unless `CI` is set); one thread releases what two do.
//! - `realworld`: sales, rental and university warehouses shaped like public sample databases,
//!   and values with surrounding spaces, from SQLite and Parquet: anonymize, verify, attack on
//!   composite-key facts; second FK paths agreeing, disagreeing, and rows hanging at the
//!   ancestor; tampered second paths and split keys caught.
//! - `bad_input`: every refusal is one line, exit 2, the source unchanged, no partial target;
//!   no output lands on an input or a user's file; closed and full standard streams.
//! - `faults`: the run killed at every step of staging and commit (SQLite and Parquet): the
//!   previous set or the new one, whole; signals; a second run on a locked target.
//! - `fuzz_decl`: random declarations, valid and corrupted, through parser, planner and
//!   registry without a panic (`scripts/soak.sh` runs a million).
//! - `dimensions`, `ldiversity`, `baselines`, `attack`, `experiments`, `clustree_search`: one
//!   capability each (the baselines refused, then caught by verify and attack).
//! - `properties`: proptest over random snowflakes (composite, shared and surrogate keys;
//!   spaced, quoted and non-ASCII names; NULL FKs; second paths), every algorithm, always
//!   verified.
//! - `init`: `relanon init` on every real-shaped fixture and a keyless CSV directory, run
//!   unchanged to a verified release; `relanon plan`'s fates, review lines and warnings;
//!   init's bad inputs (no foreign keys, a key-less entity, empty, unreadable, existing
//!   output) one line each with nothing written.
//! - `health`: a health record's unedited `init` proposal, from SQLite and from its CSV
//!   export, releases no identifier, id or twin; verify fails labels that carry member
//!   values and codes published beside their generalized descriptions.
//! - `anatomy`: `model = 'anatomy'` (000 Ch. 3) on Table 3.1 and the hospital example, both
//!   variants, verified standalone, tampering caught, the attack's rule risks, bad inputs.
//! - `keep_rows`: shape-aware clustering keeping more rows of a skewed warehouse, `KEEP`
//!   floors met by raising the suppression price or refused with the best share.
//! - `fragment`: `algorithm = 'fragment'` (004) on a wide generated table: two fragments that
//!   verify, the class repairs, the same seed the same fragments, re-joinable fragments caught
//!   by verify, bad fragmentations refused.
//! - `lattice`: global recoding of a warehouse with child tables, released within its
//!   budget or refused below its shape floor.
//! - `html` and `progress`: the report page rendered in headless Chromium, and the progress
//!   drawn on a pseudo-terminal (each skipped without its tool unless `CI` is set).
//! - `shards`: `--shards N` releases that verify, keys and rows that carry no shard, bad
//!   shard counts refused.
//! - `cluster` (`--features distributed`): a run's shards on a Ballista cluster in the
//!   process release what one machine releases, byte for byte; bad cluster inputs refused.
//! - `tidy`: ARCHITECTURE.md's invariants as a text scan of src/, each failing with the rule
//!   it names and the lines that break it.

mod adult;
mod anatomy;
mod attack;
mod bad_input;
mod baselines;
#[cfg(feature = "distributed")]
mod cluster;
mod clustree_search;
mod common;
mod dimensions;
mod experiments;
mod faults;
mod fragment;
mod fuzz_decl;
mod health;
mod html;
mod init;
mod keep_rows;
mod lattice;
mod ldiversity;
mod negotiate;
mod progress;
mod properties;
mod realworld;
mod shards;
mod table2;
mod tidy;
mod tpch;
mod university;
mod verify_leaks;
