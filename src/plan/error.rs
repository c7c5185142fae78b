//! Why a plan is refused: [`PlanError`], each message saying what to write, and the
//! [`BadFk`] a schema that is no snowflake names for `init` to set aside.

use crate::policy::Pos;
use crate::warehouse::{ForeignKey, WarehouseError};

/// Why a declarations file does not fit the warehouse. Each message says what to write.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{pos}: {message}")]
    At { pos: Pos, message: String },
    #[error("{0}")]
    Schema(String),
    /// A foreign key that keeps the family from being a snowflake (or references a
    /// non-key): the fix is to set it aside, which `init` does.
    #[error("{}", .0.message)]
    Fk(Box<BadFk>),
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
}

impl PlanError {
    /// Where in the declarations the error is, if it has a place.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            PlanError::At { pos, .. } => Some(*pos),
            _ => None,
        }
    }
}

/// A foreign key the family cannot take, with what to do.
#[derive(Debug)]
pub struct BadFk {
    pub message: String,
    /// Why, in a phrase.
    pub why: String,
    pub table: String,
    pub fk: ForeignKey,
}

/// A refusal that points at `pos` in the declarations.
pub(super) fn at(pos: Pos, message: impl Into<String>) -> PlanError {
    PlanError::At {
        pos,
        message: message.into(),
    }
}
