//! Integration tests: the `relanon` binary run on fixtures, and property tests over random
//! snowflake warehouses. One test crate with modules keeps the link cost to one binary.

mod adult;
mod attack;
mod bad_input;
mod baselines;
mod clustree_search;
mod common;
mod dimensions;
mod experiments;
mod html;
mod ldiversity;
mod progress;
mod properties;
mod realworld;
mod table2;
mod tidy;
mod tpch;
mod university;
