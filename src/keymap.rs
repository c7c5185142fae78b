//! The map from released keys back to source keys. Held in memory by `anonymize` (so it can
//! verify its own output), written to disk only on request (`--key-map PATH`, mode 0600,
//! never inside the release). Analysts never get it.
//!
//! It is held a column at a time: an integer key costs 8 bytes a row, where a pair of boxed
//! values cost about 150 (at TPC-H SF 1, 0.81 GB for 7.5 M released rows). The file is JSON,
//! a pair per released row; it is written, hashed and read a pair at a time, never as one
//! string.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One scalar of a key.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(untagged)]
pub enum KeyValue {
    Int(i64),
    Text(String),
}

impl fmt::Display for KeyValue {
    /// The value as a rendered cell shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Int(i) => write!(f, "{i}"),
            KeyValue::Text(s) => f.write_str(s),
        }
    }
}

/// A source key and the key it was released under (same arity as the table's PK): one
/// released row, as the file holds it.
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
    /// Pairs over every table.
    pub fn pairs(&self) -> u64 {
        self.tables.values().map(|t| t.len() as u64).sum()
    }

    /// A fingerprint of the map as written (xxHash64 of its JSON, in hex): report.json
    /// carries it, so a key map from another run is recognized as such before its keys are
    /// traced. It says nothing of the keys themselves.
    pub fn digest(&self) -> String {
        let mut hasher = Hashing(twox_hash::XxHash64::with_seed(0));
        serde_json::to_writer(&mut hasher, self).expect("a key map serializes: plain data");
        format!("{:016x}", std::hash::Hasher::finish(&hasher.0))
    }
}

/// Bytes written into a hash, so the JSON is hashed as it is produced.
struct Hashing(twox_hash::XxHash64);

impl std::io::Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(&mut self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One key column's values, by type: integers unboxed, text as text; a column whose values
/// differ in type (only a hand-edited file has one) keeps each value as it came.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    Int(Vec<i64>),
    Text(Vec<String>),
    Mixed(Vec<KeyValue>),
}

impl Column {
    fn new(first: &KeyValue) -> Column {
        match first {
            KeyValue::Int(_) => Column::Int(Vec::new()),
            KeyValue::Text(_) => Column::Text(Vec::new()),
        }
    }

    fn push(&mut self, v: KeyValue) {
        match (&mut *self, v) {
            (Column::Int(xs), KeyValue::Int(i)) => xs.push(i),
            (Column::Text(xs), KeyValue::Text(s)) => xs.push(s),
            (Column::Mixed(xs), v) => xs.push(v),
            (_, v) => {
                let mut mixed: Vec<KeyValue> = (0..self.len()).map(|i| self.get(i)).collect();
                mixed.push(v);
                *self = Column::Mixed(mixed);
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Int(xs) => xs.len(),
            Column::Text(xs) => xs.len(),
            Column::Mixed(xs) => xs.len(),
        }
    }

    fn get(&self, i: usize) -> KeyValue {
        match self {
            Column::Int(xs) => KeyValue::Int(xs[i]),
            Column::Text(xs) => KeyValue::Text(xs[i].clone()),
            Column::Mixed(xs) => xs[i].clone(),
        }
    }

    fn text(&self, i: usize) -> String {
        match self {
            Column::Int(xs) => xs[i].to_string(),
            Column::Text(xs) => xs[i].clone(),
            Column::Mixed(xs) => xs[i].to_string(),
        }
    }

    /// Grows by exactly `other`'s length: a map built a shard at a time would otherwise
    /// hold up to twice its pairs in spare capacity (a large block grows in place).
    fn extend(&mut self, other: Column) {
        match (&mut *self, other) {
            (Column::Int(xs), Column::Int(ys)) => {
                xs.reserve_exact(ys.len());
                xs.extend(ys)
            }
            (Column::Text(xs), Column::Text(ys)) => {
                xs.reserve_exact(ys.len());
                xs.extend(ys)
            }
            (_, other) => {
                for i in 0..other.len() {
                    self.push(other.get(i));
                }
            }
        }
    }
}

/// The group of a pair that has none.
const NO_GROUP: u32 = u32::MAX;

/// One table's key pairs, a column at a time (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableKeys {
    /// The source's primary-key columns (the order of `KeyPair::source`).
    pub columns: Vec<String>,
    /// The released key's columns (the order of `KeyPair::released`): the same columns, one
    /// surrogate column, or the parent's (a shared primary key). Empty in maps that predate
    /// it: the same as `columns`.
    pub released_columns: Vec<String>,
    source: Vec<Column>,
    released: Vec<Column>,
    /// Per pair its group, or [`NO_GROUP`]; empty while no pair has one.
    groups: Vec<u32>,
    len: usize,
}

impl TableKeys {
    pub fn new(columns: Vec<String>, released_columns: Vec<String>) -> TableKeys {
        TableKeys {
            columns,
            released_columns,
            ..TableKeys::default()
        }
    }

    /// The map of `pairs`; refused when a pair's arity is not the columns'.
    pub fn from_pairs(
        columns: Vec<String>,
        released_columns: Vec<String>,
        pairs: impl IntoIterator<Item = KeyPair>,
    ) -> Result<TableKeys, String> {
        let mut keys = TableKeys::new(columns, released_columns);
        for pair in pairs {
            keys.push(pair)?;
        }
        Ok(keys)
    }

    /// How many values a released key has: its columns', or the source's in maps that name
    /// none.
    fn released_arity(&self) -> usize {
        if self.released_columns.is_empty() {
            self.columns.len()
        } else {
            self.released_columns.len()
        }
    }

    /// Adds one released row's pair; refused when its arity is not the columns'.
    pub fn push(&mut self, pair: KeyPair) -> Result<(), String> {
        let (source, released) = (self.columns.len(), self.released_arity());
        if pair.source.len() != source || pair.released.len() != released {
            return Err(format!(
                "pair {} has {} source and {} released value(s) for keys of {source} and {released} column(s)",
                self.len + 1,
                pair.source.len(),
                pair.released.len()
            ));
        }
        push_values(&mut self.source, pair.source);
        push_values(&mut self.released, pair.released);
        match pair.group {
            Some(g) => {
                if self.groups.is_empty() {
                    self.groups = vec![NO_GROUP; self.len];
                }
                self.groups.push(g);
            }
            None if !self.groups.is_empty() => self.groups.push(NO_GROUP),
            None => {}
        }
        self.len += 1;
        Ok(())
    }

    /// Another run of pairs of the same table after these (a split table's second entry).
    pub fn extend(&mut self, other: TableKeys) {
        if !other.groups.is_empty() && self.groups.is_empty() {
            self.groups = vec![NO_GROUP; self.len];
        }
        if !self.groups.is_empty() {
            self.groups.reserve_exact(other.len);
            if other.groups.is_empty() {
                self.groups.extend(std::iter::repeat_n(NO_GROUP, other.len));
            } else {
                self.groups.extend(other.groups);
            }
        }
        extend_columns(&mut self.source, other.source);
        extend_columns(&mut self.released, other.released);
        self.len += other.len;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Maps every integer released value through `f` (a release made in pieces moves its
    /// provisional ids onto the release's keys).
    pub fn map_released(&mut self, f: impl Fn(i64) -> i64) {
        for c in &mut self.released {
            match c {
                Column::Int(xs) => xs.iter_mut().for_each(|x| *x = f(*x)),
                Column::Mixed(xs) => xs.iter_mut().for_each(|x| {
                    if let KeyValue::Int(i) = x {
                        *i = f(*i);
                    }
                }),
                Column::Text(_) => {}
            }
        }
    }

    /// Moves every group up by `by`; returns the highest group now held, if any.
    pub fn shift_groups(&mut self, by: u32) -> Option<u32> {
        for g in self.groups.iter_mut().filter(|g| **g != NO_GROUP) {
            *g = g.saturating_add(by).min(NO_GROUP - 1);
        }
        self.groups.iter().copied().filter(|&g| g != NO_GROUP).max()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pair `i`'s source value in key column `c`, rendered.
    pub fn source_text(&self, i: usize, c: usize) -> String {
        self.source[c].text(i)
    }

    /// Pair `i`'s released value in released column `c`, rendered.
    pub fn released_text(&self, i: usize, c: usize) -> String {
        self.released[c].text(i)
    }

    /// Pair `i`'s released key, rendered, in the map's released column order.
    pub fn released_key(&self, i: usize) -> Vec<String> {
        self.released.iter().map(|c| c.text(i)).collect()
    }

    pub fn group(&self, i: usize) -> Option<u32> {
        self.groups.get(i).copied().filter(|&g| g != NO_GROUP)
    }

    /// Pair `i` as the file holds it.
    pub fn pair(&self, i: usize) -> KeyPair {
        KeyPair {
            source: self.source.iter().map(|c| c.get(i)).collect(),
            released: self.released.iter().map(|c| c.get(i)).collect(),
            group: self.group(i),
        }
    }

    pub fn pairs(&self) -> impl Iterator<Item = KeyPair> + '_ {
        (0..self.len).map(|i| self.pair(i))
    }
}

fn push_values(columns: &mut Vec<Column>, values: Vec<KeyValue>) {
    if columns.is_empty() {
        columns.extend(values.iter().map(Column::new));
    }
    for (c, v) in columns.iter_mut().zip(values) {
        c.push(v);
    }
}

fn extend_columns(columns: &mut Vec<Column>, other: Vec<Column>) {
    if columns.is_empty() {
        *columns = other;
        return;
    }
    for (c, o) in columns.iter_mut().zip(other) {
        c.extend(o);
    }
}

/// `pairs` serialized a pair at a time.
struct Pairs<'a>(&'a TableKeys);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len))?;
        for pair in self.0.pairs() {
            seq.serialize_element(&pair)?;
        }
        seq.end()
    }
}

impl Serialize for TableKeys {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = if self.released_columns.is_empty() {
            2
        } else {
            3
        };
        let mut st = s.serialize_struct("TableKeys", fields)?;
        st.serialize_field("columns", &self.columns)?;
        if self.released_columns.is_empty() {
            st.skip_field("released_columns")?;
        } else {
            st.serialize_field("released_columns", &self.released_columns)?;
        }
        st.serialize_field("pairs", &Pairs(self))?;
        st.end()
    }
}

/// A table's entry as read: the pairs are put into columns as they are parsed, their arity
/// checked against the columns once those are known (a file may name them after the pairs).
#[derive(Deserialize)]
struct Entry {
    columns: Vec<String>,
    #[serde(default)]
    released_columns: Vec<String>,
    pairs: Parsed,
}

/// Pairs parsed into columns; arity is checked against the first pair as they come.
struct Parsed(TableKeys);

impl<'de> Deserialize<'de> for Parsed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parsed, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Parsed;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of key pairs")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
                let mut keys: Option<TableKeys> = None;
                while let Some(pair) = seq.next_element::<KeyPair>()? {
                    let keys = keys.get_or_insert_with(|| {
                        // Unnamed columns, as many as the first pair's values: the entry's
                        // names replace them once read.
                        TableKeys::new(
                            vec![String::new(); pair.source.len()],
                            vec![String::new(); pair.released.len()],
                        )
                    });
                    keys.push(pair).map_err(de::Error::custom)?;
                }
                Ok(Parsed(keys.unwrap_or_default()))
            }
        }
        d.deserialize_seq(Each)
    }
}

impl<'de> Deserialize<'de> for TableKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TableKeys, D::Error> {
        let Entry {
            columns,
            released_columns,
            pairs: Parsed(mut keys),
        } = Entry::deserialize(d)?;
        let parsed = (keys.columns.len(), keys.released_columns.len());
        keys.columns = columns;
        keys.released_columns = released_columns;
        if keys.len > 0 && parsed != (keys.columns.len(), keys.released_arity()) {
            return Err(de::Error::custom(format!(
                "its pairs have {} source and {} released value(s) for keys of {} and {} column(s)",
                parsed.0,
                parsed.1,
                keys.columns.len(),
                keys.released_arity()
            )));
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(source: Vec<KeyValue>, released: i64, group: Option<u32>) -> KeyPair {
        KeyPair {
            source,
            released: vec![KeyValue::Int(released)],
            group,
        }
    }

    fn sample() -> KeyMap {
        let orders = TableKeys::from_pairs(
            vec!["o_orderkey".into()],
            vec!["o_orderkey".into()],
            vec![
                pair(vec![KeyValue::Int(7)], 2, Some(0)),
                pair(vec![KeyValue::Int(9)], 1, None),
            ],
        )
        .expect("arity 1");
        let lines = TableKeys::from_pairs(
            vec!["order".into(), "line".into()],
            vec!["line_key".into()],
            vec![
                pair(vec![KeyValue::Int(7), KeyValue::Text("a".into())], 1, None),
                pair(vec![KeyValue::Text("x".into()), KeyValue::Int(2)], 2, None),
            ],
        )
        .expect("arity 2 and 1");
        let old = TableKeys::from_pairs(
            vec!["id".into()],
            Vec::new(),
            vec![pair(vec![KeyValue::Text("u-1".into())], 5, Some(3))],
        )
        .expect("released like the source");
        KeyMap {
            tables: [("orders", orders), ("lines", lines), ("old", old)]
                .into_iter()
                .map(|(n, t)| (n.to_string(), t))
                .collect(),
        }
    }

    /// The file as the map held a `Vec<KeyPair>` per table wrote it.
    fn as_pairs_json(map: &KeyMap) -> String {
        #[derive(serde::Serialize)]
        struct Old {
            columns: Vec<String>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            released_columns: Vec<String>,
            pairs: Vec<KeyPair>,
        }
        let tables: BTreeMap<&String, Old> = map
            .tables
            .iter()
            .map(|(n, t)| {
                let old = Old {
                    columns: t.columns.clone(),
                    released_columns: t.released_columns.clone(),
                    pairs: t.pairs().collect(),
                };
                (n, old)
            })
            .collect();
        #[derive(serde::Serialize)]
        struct OldMap<'a> {
            tables: BTreeMap<&'a String, Old>,
        }
        serde_json::to_string(&OldMap { tables }).expect("serializes")
    }

    #[test]
    fn the_file_is_a_pair_per_row_as_before_and_reads_back_the_same() {
        let map = sample();
        let json = serde_json::to_string(&map).expect("serializes");
        assert_eq!(json, as_pairs_json(&map));
        let back: KeyMap = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, map);
        assert_eq!(back.digest(), map.digest());
        assert_eq!(
            map.digest(),
            format!("{:016x}", twox_hash::XxHash64::oneshot(0, json.as_bytes())),
            "the digest is the hash of the file's bytes"
        );
    }

    #[test]
    fn values_render_as_cells_and_groups_stay_with_their_rows() {
        let map = sample();
        let lines = &map.tables["lines"];
        assert_eq!(lines.len(), 2);
        assert_eq!(lines.source_text(0, 1), "a");
        assert_eq!(
            lines.source_text(1, 0),
            "x",
            "a mixed column keeps each value"
        );
        assert_eq!(lines.released_text(1, 0), "2");
        let orders = &map.tables["orders"];
        assert_eq!(orders.group(0), Some(0));
        assert_eq!(orders.group(1), None);
        let mut both = orders.clone();
        both.extend(orders.clone());
        assert_eq!(
            both.pairs().map(|p| p.group).collect::<Vec<_>>(),
            vec![Some(0), None, Some(0), None]
        );
    }

    #[test]
    fn a_pair_of_the_wrong_arity_is_refused_with_its_position() {
        let mut keys = TableKeys::new(vec!["a".into(), "b".into()], vec!["k".into()]);
        let e = keys
            .push(pair(vec![KeyValue::Int(1)], 1, None))
            .expect_err("one value for two columns");
        assert!(e.contains("pair 1 has 1 source"), "{e}");
        let ragged = r#"{"tables":{"t":{"columns":["a"],"pairs":[
            {"source":[1],"released":[2]},{"source":[1,2],"released":[3]}]}}}"#;
        let e = serde_json::from_str::<KeyMap>(ragged).expect_err("ragged");
        assert!(e.to_string().contains("pair 2"), "{e}");
        let named_wrong = r#"{"tables":{"t":{"columns":["a","b"],"pairs":[
            {"source":[1],"released":[2]}]}}}"#;
        let e = serde_json::from_str::<KeyMap>(named_wrong).expect_err("two columns named");
        assert!(e.to_string().contains("keys of 2"), "{e}");
    }

    #[test]
    fn an_integer_key_costs_eight_bytes_a_row() {
        let mut keys = TableKeys::new(vec!["id".into()], vec!["id".into()]);
        for i in 0..1000 {
            keys.push(pair(vec![KeyValue::Int(i)], i + 1, None))
                .expect("arity 1");
        }
        assert!(matches!(&keys.source[0], Column::Int(xs) if xs.len() == 1000));
        assert!(matches!(&keys.released[0], Column::Int(xs) if xs.len() == 1000));
        assert!(keys.groups.is_empty(), "no group, no group column");
    }
}
