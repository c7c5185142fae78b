//! The options an algorithm reads (`ANONYMIZE ... WITH (name = value)` or `SET name = value`),
//! declared by the algorithm as a table of [`OptionSpec`]s: what values each takes, its
//! default, one line on what it does. [`Options::read`] checks what the declarations wrote
//! against the chosen algorithm's table and fills in the defaults; an algorithm then reads its
//! values by name ([`Options::number`], [`Options::count`], [`Options::choice`]), each the
//! value its own table declared.

use crate::plan::RawOption;
use crate::policy::{Pos, Value};

/// What values an option takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A number in `[min, max]`.
    Number { min: f64, max: f64 },
    /// A whole number in `[min, max]`.
    Count { min: f64, max: f64 },
    /// One of the spellings, each `(written, meant)`: the option holds the meant name.
    Choice(&'static [(&'static str, &'static str)]),
    /// A list of whole numbers written as text, `'2, 0, 1'` (a lattice node's levels).
    Levels,
    /// A name written as text, kept as written (fragmentation's `class` column).
    Text,
}

/// An option's value when the declarations do not set it.
#[derive(Debug, Clone, Copy)]
pub enum Default {
    Number(f64),
    Count(usize),
    Choice(&'static str),
    /// Not set: the algorithm's own behaviour applies (`candidates`: no blocking).
    Unset,
}

/// One option of an algorithm's table.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    /// Other names the option may be written as (`th` for `threshold`).
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub default: Default,
    /// A further condition on a number, with what to write instead (`s` must be above 0).
    pub check: Option<fn(f64) -> Result<(), String>>,
    /// What it does, one line.
    pub doc: &'static str,
}

impl OptionSpec {
    /// Whether the declarations' (lower-case) `name` means this option.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// The option's value from what was written, or what to write instead.
    fn value(&self, raw: &RawOption) -> Result<OptionValue, String> {
        let name = &raw.name;
        let number = |min: f64, max: f64| match raw.value {
            Value::Number(n) if n >= min && n <= max => Ok(n),
            ref value => Err(format!(
                "{name} must be a number between {min} and {max}, found {value}"
            )),
        };
        let value = match self.kind {
            Kind::Number { min, max } => OptionValue::Number(number(min, max)?),
            Kind::Count { min, max } => {
                let n = number(min, max)?;
                if n.fract() != 0.0 {
                    return Err(format!("{name} must be a whole number, found {n}"));
                }
                OptionValue::Count(n as usize)
            }
            Kind::Choice(spellings) => {
                let written = match &raw.value {
                    Value::Text(s) => s.to_ascii_lowercase(),
                    Value::Number(n) => n.to_string(),
                };
                let meant = spellings
                    .iter()
                    .find(|(w, _)| *w == written)
                    .map(|(_, m)| *m)
                    .ok_or_else(|| {
                        let mut names: Vec<&str> = spellings.iter().map(|(_, m)| *m).collect();
                        names.dedup();
                        format!(
                            "{name} must be {}, found '{written}'",
                            names
                                .iter()
                                .map(|n| format!("'{n}'"))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )
                    })?;
                OptionValue::Choice(meant)
            }
            Kind::Levels => {
                let Value::Text(text) = &raw.value else {
                    return Err(format!(
                        "{name} must be text listing one level per QI column, e.g. '2, 0, 1', found {}",
                        raw.value
                    ));
                };
                let levels = text
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|p| !p.is_empty())
                    .map(|p| p.parse::<u16>())
                    .collect::<Result<Vec<u16>, _>>()
                    .map_err(|_| {
                        format!("{name} must list whole numbers (one level per QI column), e.g. '2, 0, 1', found '{text}'")
                    })?;
                OptionValue::Levels(levels)
            }
            Kind::Text => match &raw.value {
                Value::Text(text) if !text.trim().is_empty() => {
                    OptionValue::Text(text.trim().to_string())
                }
                value => {
                    return Err(format!(
                    "{name} must be a name written as text, e.g. {name} = 'income', found {value}"
                ))
                }
            },
        };
        if let (Some(check), OptionValue::Number(n)) = (self.check, &value) {
            check(*n)?;
        }
        Ok(value)
    }
}

/// An option's value in force.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    Number(f64),
    Count(usize),
    Choice(&'static str),
    Levels(Vec<u16>),
    Text(String),
    Unset,
}

impl From<Default> for OptionValue {
    fn from(d: Default) -> OptionValue {
        match d {
            Default::Number(n) => OptionValue::Number(n),
            Default::Count(n) => OptionValue::Count(n),
            Default::Choice(c) => OptionValue::Choice(c),
            Default::Unset => OptionValue::Unset,
        }
    }
}

/// The values of one algorithm's options, in its table's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    values: Vec<(&'static str, OptionValue)>,
    /// The run's secret `seed` (a shared option, `Params::seed`), for an algorithm that draws
    /// at random (hybrid's randomized variant); `None`: drawn from the OS. Never reported, as
    /// the key seed is not: it is no option of the algorithm's table.
    pub seed: Option<u64>,
}

impl Options {
    /// Every option of `table` at its default.
    pub fn defaults(table: &[OptionSpec]) -> Options {
        Options {
            values: table.iter().map(|o| (o.name, o.default.into())).collect(),
            seed: None,
        }
    }

    /// `written` checked against `table`, later settings overriding earlier ones; an option
    /// the table lacks is returned to the caller, which knows whose option it is.
    pub fn read<'r>(
        table: &[OptionSpec],
        written: &'r [RawOption],
    ) -> Result<Options, OptionError<'r>> {
        let mut options = Options::defaults(table);
        for raw in written {
            let Some((i, spec)) = table
                .iter()
                .enumerate()
                .find(|(_, o)| o.answers_to(&raw.name))
            else {
                return Err(OptionError::NotInTable(raw));
            };
            options.values[i].1 = spec.value(raw).map_err(|message| OptionError::Invalid {
                pos: raw.pos,
                message,
            })?;
        }
        Ok(options)
    }

    /// Whether the algorithm's table declares option `name`.
    pub fn declares(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| *n == name)
    }

    /// These options with number option `name` (which the table declares) set to `value`.
    pub fn with_number(&self, name: &str, value: f64) -> Options {
        let mut out = self.clone();
        for (n, v) in &mut out.values {
            if *n == name {
                *v = OptionValue::Number(value);
            }
        }
        out
    }

    /// Every option with its value, in the table's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, OptionValue)> + '_ {
        self.values.iter().cloned()
    }

    fn get(&self, name: &str) -> &OptionValue {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
            .expect("an algorithm reads only the options its own table declares")
    }

    /// A `Kind::Number` option.
    pub fn number(&self, name: &str) -> f64 {
        match self.get(name) {
            OptionValue::Number(n) => *n,
            other => panic!("option {name} is declared as a number, holds {other:?}"),
        }
    }

    /// A `Kind::Number` option that may be unset.
    pub fn optional_number(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            OptionValue::Number(n) => Some(*n),
            OptionValue::Unset => None,
            other => panic!("option {name} is declared as a number, holds {other:?}"),
        }
    }

    /// A `Kind::Count` option with a default.
    pub fn count(&self, name: &str) -> usize {
        self.optional_count(name)
            .expect("a count option read with count() has a default")
    }

    /// A `Kind::Count` option that may be unset.
    pub fn optional_count(&self, name: &str) -> Option<usize> {
        match self.get(name) {
            OptionValue::Count(n) => Some(*n),
            OptionValue::Unset => None,
            other => panic!("option {name} is declared as a count, holds {other:?}"),
        }
    }

    /// A `Kind::Choice` option: the meant name.
    pub fn choice(&self, name: &str) -> &'static str {
        match self.get(name) {
            OptionValue::Choice(c) => c,
            other => panic!("option {name} is declared as a choice, holds {other:?}"),
        }
    }

    /// A `Kind::Text` option without a default: `None` when not set.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            OptionValue::Text(t) => Some(t),
            OptionValue::Unset => None,
            other => panic!("option {name} is declared as text, holds {other:?}"),
        }
    }

    /// A `Kind::Levels` option without a default: `None` when not set.
    pub fn levels(&self, name: &str) -> Option<&[u16]> {
        match self.get(name) {
            OptionValue::Levels(l) => Some(l),
            OptionValue::Unset => None,
            other => panic!("option {name} is declared as levels, holds {other:?}"),
        }
    }
}

/// An option's value as it travels between processes (a run on a cluster hands the options
/// a shard settled on back to the client): a choice by its meant name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum WireValue {
    Number(f64),
    Count(usize),
    Choice(String),
    Levels(Vec<u16>),
    Text(String),
    Unset,
}

impl Options {
    /// Every option with its value, as it travels.
    pub fn to_wire(&self) -> Vec<(String, WireValue)> {
        self.values
            .iter()
            .map(|(name, v)| {
                let w = match v {
                    OptionValue::Number(n) => WireValue::Number(*n),
                    OptionValue::Count(n) => WireValue::Count(*n),
                    OptionValue::Choice(c) => WireValue::Choice((*c).to_string()),
                    OptionValue::Levels(l) => WireValue::Levels(l.clone()),
                    OptionValue::Text(t) => WireValue::Text(t.clone()),
                    OptionValue::Unset => WireValue::Unset,
                };
                (name.to_string(), w)
            })
            .collect()
    }

    /// Options of `table` read back from [`Options::to_wire`]'s form: every name must be the
    /// table's and every choice one it means (another build's options are refused). The
    /// secret seed does not travel: the caller restores it.
    pub fn from_wire(
        table: &[OptionSpec],
        wire: Vec<(String, WireValue)>,
    ) -> Result<Options, String> {
        let mut options = Options::defaults(table);
        for (name, w) in wire {
            let (i, spec) = table
                .iter()
                .enumerate()
                .find(|(_, o)| o.name == name)
                .ok_or_else(|| format!("option {name} is not this build's"))?;
            options.values[i].1 = match w {
                WireValue::Number(n) => OptionValue::Number(n),
                WireValue::Count(n) => OptionValue::Count(n),
                WireValue::Choice(c) => OptionValue::Choice(meant(spec, &c)?),
                WireValue::Levels(l) => OptionValue::Levels(l),
                WireValue::Text(t) => OptionValue::Text(t),
                WireValue::Unset => OptionValue::Unset,
            };
        }
        Ok(options)
    }
}

/// The static name `spec` means by choice `c`.
fn meant(spec: &OptionSpec, c: &str) -> Result<&'static str, String> {
    let spellings: &[(&str, &str)] = match spec.kind {
        Kind::Choice(s) => s,
        _ => &[],
    };
    let default = match spec.default {
        Default::Choice(d) => Some(d),
        _ => None,
    };
    spellings
        .iter()
        .map(|(_, m)| *m)
        .chain(default)
        .find(|m| *m == c)
        .ok_or_else(|| format!("option {} has no choice {c} in this build", spec.name))
}

/// Why [`Options::read`] did not take what was written.
#[derive(Debug)]
pub enum OptionError<'r> {
    /// The table has no such option.
    NotInTable(&'r RawOption),
    /// The option is the table's, the value is not one it takes.
    Invalid { pos: Pos, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CDGH's options and ClusTree's: a number with an alias, a count and a choice.
    fn table() -> Vec<OptionSpec> {
        let clustree = crate::algo::ALGORITHMS
            .iter()
            .find(|s| s.name == "clustree")
            .expect("clustree is registered");
        crate::algo::kernel::cdgh::OPTIONS
            .iter()
            .chain(clustree.options)
            .copied()
            .collect()
    }

    fn raw(name: &str, value: Value) -> RawOption {
        RawOption {
            name: name.to_string(),
            value,
            pos: Pos { line: 2, column: 5 },
        }
    }

    #[test]
    fn defaults_fill_what_is_not_written_and_aliases_and_spellings_resolve() {
        let written = [
            raw("th", Value::Number(0.5)),
            raw("mapping", Value::Text("Greedy".into())),
        ];
        let o = Options::read(&table(), &written).expect("valid");
        assert_eq!(o.number("threshold"), 0.5);
        assert_eq!(o.choice("mapping"), "grd");
        assert_eq!(o.optional_count("candidates"), None);
        let names: Vec<&str> = o.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "threshold",
                "climit",
                "mapping",
                "m",
                "s",
                "candidates",
                "suppression_price",
                "order",
                "relocate"
            ]
        );
        assert_eq!(o.count("climit"), 150);
    }

    #[test]
    fn options_come_back_from_the_wire_as_they_left_and_another_builds_are_refused() {
        let written = [
            raw("th", Value::Number(0.1 + 0.2)),
            raw("mapping", Value::Text("Greedy".into())),
            raw("candidates", Value::Number(7.0)),
        ];
        let o = Options::read(&table(), &written).expect("valid");
        let back = Options::from_wire(&table(), o.to_wire()).expect("the same table");
        assert_eq!(back, o);
        assert_eq!(back.number("threshold").to_bits(), (0.1f64 + 0.2).to_bits());
        let mut unknown = o.to_wire();
        unknown.push(("gamma".into(), WireValue::Count(1)));
        assert!(Options::from_wire(&table(), unknown).is_err());
        let mut choice = o.to_wire();
        for (n, v) in &mut choice {
            if n == "mapping" {
                *v = WireValue::Choice("no-such-mapping".into());
            }
        }
        let err = Options::from_wire(&table(), choice).expect_err("not a choice of the table");
        assert!(err.contains("no-such-mapping"), "{err}");
    }

    #[test]
    fn a_later_setting_overrides_an_earlier_one() {
        let written = [
            raw("candidates", Value::Number(10.0)),
            raw("candidates", Value::Number(20.0)),
        ];
        let o = Options::read(&table(), &written).expect("valid");
        assert_eq!(o.optional_count("candidates"), Some(20));
        let half = [raw("climit", Value::Number(20.5))];
        match Options::read(&table(), &half) {
            Err(OptionError::Invalid { message, .. }) => {
                assert_eq!(message, "climit must be a whole number, found 20.5")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn out_of_range_values_and_unknown_spellings_say_what_is_allowed() {
        let bad = [raw("threshold", Value::Number(2.0))];
        match Options::read(&table(), &bad) {
            Err(OptionError::Invalid { message, pos }) => {
                assert_eq!(pos.line, 2);
                assert_eq!(
                    message,
                    "threshold must be a number between 0 and 1, found 2"
                );
            }
            other => panic!("{other:?}"),
        }
        let bad = [raw("mapping", Value::Text("best".into()))];
        match Options::read(&table(), &bad) {
            Err(OptionError::Invalid { message, .. }) => {
                assert_eq!(message, "mapping must be 'lsap' or 'grd', found 'best'")
            }
            other => panic!("{other:?}"),
        }
        let bad = [raw("k_max", Value::Number(2.0))];
        assert!(matches!(
            Options::read(&table(), &bad),
            Err(OptionError::NotInTable(r)) if r.name == "k_max"
        ));
    }
}
