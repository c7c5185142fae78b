//! relanon: a SQL-native anonymizer for relational warehouses.
//!
//! Data flows one way: declarations ([`decl`] -> [`policy`]) -> [`plan`] -> [`forest`] ->
//! [`algo`] -> [`release`] -> [`verify`] / [`report`]. See ARCHITECTURE.md.
//!
//! The papers are cited by key (`001 Alg. 3`: Algorithm 3 of 001), as in the README:
//! - 000: Ozalp, *Privacy Preserving Publishing of Hierarchical Data* (PhD thesis, 2017):
//!   ClusTree, CToff, dMiRaCle, l-diversity of records, anatomization.
//! - 001: Nergiz, Clifton, Nergiz, *MultiRelational k-Anonymity* (TKDE 2009): MiRaCle,
//!   MiRaCleX, LM and DM, the failing baselines.
//! - 002: Pilalidou, *Online Negotiation for Privacy Preserving Data Publishing* (MSc thesis,
//!   2010): the lattice with negotiation.
//! - 003: Nergiz, Gok, Ozkanli, *Preservation of Utility through Hybrid k-Anonymization*
//!   (TrustBus 2013): hybrid relocation.
//! - 004: Zakerzadeh, Aggarwal, Barker, *Towards Breaking the Curse of Dimensionality for
//!   High-Dimensional Privacy*: vertical fragmentation.

pub mod algo;
pub mod attack;
pub mod budget;
pub mod decl;
pub mod experiment;
pub mod forest;
pub mod fraction;
pub mod generate;
pub mod hierarchy;
pub mod html;
pub mod init;
pub mod keymap;
pub mod lattice_file;
pub mod outputs;
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
