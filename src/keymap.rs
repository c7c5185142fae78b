//! The map from released keys back to source keys. Held in memory by `anonymize` (so it can
//! verify its own output), written to disk only on request (`--key-map PATH`, mode 0600,
//! never inside the release). Analysts never get it.

use std::collections::BTreeMap;

/// One scalar of a key.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(untagged)]
pub enum KeyValue {
    Int(i64),
    Text(String),
}

/// A source key and the key it was released under (same arity as the table's PK).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyPair {
    pub source: Vec<KeyValue>,
    pub released: Vec<KeyValue>,
    /// The representative vertex the row was released as: rows of one EC with the same
    /// group are the vertices the anonymizer matched. A hint for the verifier, which checks
    /// it like any other candidate matching (and searches when it does not hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
}

/// Per family table (by name): the PK columns and every released row's key pair.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeyMap {
    pub tables: BTreeMap<String, TableKeys>,
}

impl KeyMap {
    /// A fingerprint of the map as written (xxHash64 of its JSON, in hex): report.json
    /// carries it, so a key map from another run is recognized as such before its keys are
    /// traced. It says nothing of the keys themselves.
    pub fn digest(&self) -> String {
        let json = serde_json::to_string(self).expect("a key map serializes: plain data");
        format!("{:016x}", twox_hash::XxHash64::oneshot(0, json.as_bytes()))
    }
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableKeys {
    /// The source's primary-key columns (the order of `KeyPair::source`).
    pub columns: Vec<String>,
    /// The released key's columns (the order of `KeyPair::released`): the same columns, one
    /// surrogate column, or the parent's (a shared primary key). Empty in maps that predate
    /// it: the same as `columns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released_columns: Vec<String>,
    pub pairs: Vec<KeyPair>,
}
