//! relanon: a SQL-native anonymizer for relational warehouses.
//!
//! Data flows one way: declarations ([`decl`] -> [`policy`]) -> [`plan`] -> [`forest`] ->
//! [`algo`] -> [`release`] -> [`verify`] / [`report`]. See ARCHITECTURE.md.

pub mod algo;
pub mod attack;
pub mod decl;
pub mod experiment;
pub mod forest;
pub mod generate;
pub mod hierarchy;
pub mod html;
pub mod keymap;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod release;
pub mod report;
pub mod sensitive;
pub mod utility;
pub mod verify;
pub mod views;
pub mod warehouse;
