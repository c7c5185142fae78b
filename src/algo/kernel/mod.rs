//! What several algorithms share. A kernel knows no algorithm: algorithms import kernels,
//! never the other way round, and never each other (the registry in `algo` is the one place
//! that names them all).

pub mod ahead;
pub mod annotate;
pub mod cdgh;
pub mod diversify;
pub mod lattice;
pub mod lca_loss;
pub mod pairwise;
pub mod partial;
pub mod relocate;
pub mod search;
pub mod shape;
pub mod tree;
