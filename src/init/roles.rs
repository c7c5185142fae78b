//! A role for one column, with the reason a data owner reads beside it, and the hierarchy
//! a quasi-identifier is generalized through. Decided from the column's name (split into
//! words) and its values (`Profile`), in a fixed order: what identifies first, then what
//! is a date, a demographic, a measure of health or money, and last what the values alone
//! say (nearly unique, a category, a measure).

use super::keys::words;
use super::profile::Profile;

/// How a proposed quasi-identifier is generalized.
#[derive(Debug, Clone, PartialEq)]
pub enum HierarchyPlan {
    /// `AS DATE PARTS (...)`, finest part first.
    DateParts(Vec<&'static str>),
    /// `AS BANDS (...)`, finest width first.
    Bands(Vec<f64>),
    /// `AS SELECT ...`: a grouping read from the tables an FK leads to.
    Select(String),
    /// Rows `leaf, parent, ...` built from the values: a CSV file beside the declarations,
    /// or `AS VALUES` where a value cannot be written in a CSV cell.
    Rows(Vec<Vec<String>>),
}

/// A proposed role.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    Identifier,
    Qi(HierarchyPlan),
    /// Always a suggestion to review: nothing about sensitivity is guessed silently.
    Sensitive,
    Insensitive,
}

/// A role and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub role: Role,
    pub reason: String,
    /// Marked `-- review` in the file and listed by `plan`.
    pub review: bool,
}

impl Decision {
    pub fn new(role: Role, reason: impl Into<String>) -> Decision {
        Decision {
            role,
            reason: reason.into(),
            review: false,
        }
    }
}

/// Words that make a column an identifier wherever they stand in its name.
const IDENTIFYING: &[&str] = &[
    "email",
    "mail",
    "phone",
    "mobile",
    "fax",
    "tel",
    "telephone",
    "cellphone",
    "address",
    "street",
    "addr",
    "zip",
    "zipcode",
    "postal",
    "postcode",
    "ssn",
    "passport",
    "iban",
    "bic",
    "swift",
    "ip",
    "url",
    "website",
    "homepage",
    "password",
    "passwd",
    "pwd",
    "login",
    "username",
    "surname",
    "firstname",
    "lastname",
    "fullname",
    "nickname",
    "maiden",
    "comment",
    "comments",
    "note",
    "notes",
    "remark",
    "remarks",
    "memo",
    "bio",
    "photo",
    "picture",
    "image",
    "avatar",
    "signature",
    "token",
    "secret",
    "hash",
    "license",
    "licence",
    "plate",
    "vin",
    "imei",
    "mac",
];

/// Words that, before `name`, make it a person's name.
const PERSON_NAME: &[&str] = &[
    "first", "last", "given", "family", "middle", "full", "contact", "nick", "user", "maiden",
    "display", "customer", "person", "patient", "employee", "student", "member", "client",
];

/// Words of a person's own traits: demographics, and (with the phone) what says a table is
/// about people beside names and e-mail addresses.
const PERSONAL_TRAITS: &[&str] = &[
    "birth",
    "birthday",
    "birthdate",
    "dob",
    "born",
    "yob",
    "gender",
    "sex",
    "age",
    "phone",
];

/// Further words of demographics and places.
const DEMOGRAPHIC: &[&str] = &[
    "race",
    "ethnicity",
    "ethnic",
    "nationality",
    "citizenship",
    "marital",
    "religion",
    "city",
    "country",
    "state",
    "region",
    "district",
    "county",
    "province",
    "town",
    "occupation",
    "job",
    "profession",
    "education",
    "degree",
    "language",
];

/// Words of health and money: suggested SENSITIVE, for review.
const SENSITIVE: &[&str] = &[
    "salary",
    "income",
    "wage",
    "wages",
    "amount",
    "price",
    "total",
    "balance",
    "revenue",
    "cost",
    "payment",
    "fee",
    "diagnosis",
    "disease",
    "illness",
    "health",
    "condition",
    "medication",
    "drug",
    "treatment",
    "symptom",
    "grade",
    "score",
    "gpa",
    "debt",
    "loan",
    "credit",
];

/// Whether a column's name says it is about identifying someone, and the word that does.
pub fn identifying_name(name: &str, in_entity: bool) -> Option<String> {
    let w = words(name);
    if let Some(hit) = w.iter().find(|x| IDENTIFYING.contains(&x.as_str())) {
        return Some(hit.clone());
    }
    let joined = w.join(" ");
    for phrase in [
        "national id",
        "tax id",
        "social security",
        "account number",
        "card number",
        "credit card",
    ] {
        if joined.contains(phrase) {
            return Some(phrase.to_string());
        }
    }
    if let Some(i) = w.iter().position(|x| x == "name") {
        let person = i > 0 && PERSON_NAME.contains(&w[i - 1].as_str());
        if person || (in_entity && w.len() == 1) {
            return Some(joined);
        }
    }
    None
}

/// How strongly a table's columns say it is about people (for choosing the entity table):
/// 2 when a column holds a person's name or e-mail, 1 for demographics or a phone alone,
/// and the columns that say so.
pub fn person_columns(columns: &[String]) -> (u8, Vec<String>) {
    let mut strength = 0;
    let mut hits = Vec::new();
    for c in columns {
        let w = words(c);
        let named = identifying_name(c, true)
            .is_some_and(|hit| hit.contains("name") || hit.contains("mail") || hit == "surname");
        let demographic = w.iter().any(|x| PERSONAL_TRAITS.contains(&x.as_str()));
        if named {
            strength = 2;
        } else if demographic {
            strength = strength.max(1);
        } else {
            continue;
        }
        hits.push(c.clone());
    }
    (strength, hits)
}

/// What `classify` knows of a column beyond its name and values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// The column is in the entity table.
    pub in_entity: bool,
    /// The column is in a table two or more levels below the entity (a family that deep
    /// multiplies the quasi-identifiers every class must match).
    pub deep: bool,
    /// How its values spread over the entities (`None` when it was not measured).
    pub spread: Option<super::holders::Spread>,
}

/// More distinct values than this in a column published unchanged is more than a handful:
/// the proposal marks it for review.
pub const HANDFUL: usize = 5;

/// The role of an ordinary column (not a key, not a reference to another table).
pub fn classify(name: &str, cx: Context, p: &Profile) -> Decision {
    if p.present() == 0 {
        return Decision::new(
            Role::Identifier,
            "every value is NULL in the source: left out; give it a role if it will hold data",
        );
    }
    if let Some(word) = identifying_name(name, cx.in_entity) {
        return Decision::new(
            Role::Identifier,
            format!("its name ('{word}') says it may identify or describe a person"),
        );
    }
    if let Some((pattern, n)) = p.dominant_pattern() {
        return Decision::new(
            Role::Identifier,
            format!(
                "its values look like {} ({n} of {} sampled)",
                pattern.describe(),
                p.sampled
            ),
        );
    }
    if p.distinct_count == 1 && p.nulls == 0 {
        return Decision::new(
            Role::Insensitive,
            "the same value in every row: it tells nothing about anyone; published unchanged",
        );
    }
    if p.dates || p.date_typed() {
        return date(p, cx.deep);
    }
    let w = words(name);
    if let Some(d) = demographic(&w, p) {
        return d;
    }
    if let Some(d) = coded(name, &w, p) {
        return d;
    }
    if let Some(word) = w.iter().find(|x| SENSITIVE.contains(&stem(x))) {
        return Decision {
            role: Role::Sensitive,
            reason: format!("its name ('{word}') suggests health or money: published unchanged and counted for l-diversity; make it INSENSITIVE if it is not sensitive, or QUASI IDENTIFIER if an adversary could know it"),
            review: true,
        };
    }
    if let Some(s) = cx
        .spread
        .filter(|s| s.names_people() && may_name_people(name, p))
    {
        return Decision::new(
            Role::Identifier,
            format!("{} of its {} values are each held by fewer than k people: it names the few who hold them, as a name or an id would", s.rare, s.values),
        );
    }
    let text_or_whole = !p.numeric || p.integral;
    if p.nearly_unique() && text_or_whole {
        return Decision::new(
            Role::Identifier,
            format!("nearly every value is its own ({} distinct in {} rows): a name or code that singles out its row", p.distinct_count, p.present()),
        );
    }
    if p.numeric && !(p.integral && p.distinct_count <= 12) {
        return Decision {
            role: Role::Insensitive,
            reason: "a measure whose name names no demographic: published unchanged; make it SENSITIVE if it tells something about a person's health or money".into(),
            review: p.distinct_count > HANDFUL,
        };
    }
    if p.categorical() {
        return match grouping(p) {
            Some(rows) => Decision::new(
                Role::Qi(HierarchyPlan::Rows(rows)),
                format!("a category ({} value(s)) an adversary may know: generalized through groups of its values; edit the groups", p.distinct_count),
            ),
            None => unlistable(p),
        };
    }
    Decision::new(
        Role::Identifier,
        format!(
            "text with many values ({} distinct in {} rows), which may name or describe a person",
            p.distinct_count,
            p.present()
        ),
    )
}

/// Whether a column's spread over the people can make it an identifier: text and ids name
/// people; a measure (an amount, a count) is as varied as a name, but no adversary looks a
/// person up by it, and a date is a quasi-identifier whatever its spread.
pub fn may_name_people(name: &str, p: &Profile) -> bool {
    (!p.numeric || super::keys::id_like(name)) && !p.dates && !p.date_typed()
}

/// A word without the digits a numbered column adds (`DIAGNOSIS1` -> diagnosis).
fn stem(word: &str) -> &str {
    word.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// A date: generalized to its month, or (deep in the family) one part coarser, then
/// coarser still.
fn date(p: &Profile, deep: bool) -> Decision {
    let parts = date_parts(p);
    if deep {
        let first = parts[1];
        return Decision::new(
            Role::Qi(HierarchyPlan::DateParts(parts[1..].to_vec())),
            format!("a date deep in the family: generalized to its {first}, then coarser (a class must match the dates of every row below its people, and months would cost most of those rows); add month to the parts to keep finer dates"),
        );
    }
    Decision::new(
        Role::Qi(HierarchyPlan::DateParts(parts)),
        "a date: generalized to its month, then coarser",
    )
}

/// A demographic or a place, by a word of its name: bands for a number, groups of its
/// values otherwise.
fn demographic(w: &[String], p: &Profile) -> Option<Decision> {
    // A phone is an identifier, caught before; the other traits are demographics.
    let word = w
        .iter()
        .find(|x| DEMOGRAPHIC.contains(&stem(x)) || PERSONAL_TRAITS.contains(&stem(x)))?;
    if p.numeric {
        return Some(Decision::new(
            Role::Qi(bands(p)),
            format!("a demographic number ('{word}'): generalized to bands"),
        ));
    }
    Some(match grouping(p) {
        Some(rows) => Decision::new(
            Role::Qi(HierarchyPlan::Rows(rows)),
            format!("a demographic or a place ('{word}', {} value(s)): generalized through groups of its values; edit the groups", p.distinct_count),
        ),
        None => unlistable(p),
    })
}

/// Whether a name says the column holds codes (`CODE`, `ReasonCode`, `icd_code`) or their
/// readable text (`DESCRIPTION`, `REASONDESCRIPTION`, `desc`).
pub fn coded_name(name: &str, w: &[String]) -> Option<&'static str> {
    let squashed = super::keys::squash(name);
    let squashed = stem(&squashed);
    if squashed.ends_with("code") || w.iter().any(|x| stem(x) == "codes") {
        Some("code")
    } else if squashed.ends_with("description")
        || w.iter().any(|x| ["desc", "descr"].contains(&stem(x)))
    {
        Some("description")
    } else {
        None
    }
}

/// A code, or a code's readable text, of many categories: what a record says happened to a
/// person (a diagnosis, a drug, a procedure), never a measure, proposed SENSITIVE for review.
/// A code of nearly one value per row is an identifier; one of a handful of values, a
/// category like any other.
fn coded(name: &str, w: &[String], p: &Profile) -> Option<Decision> {
    let kind = coded_name(name, w)?;
    if p.nearly_unique() {
        return Some(Decision::new(
            Role::Identifier,
            format!("a {kind} of nearly one value per row ({} distinct in {} rows): it singles out its row", p.distinct_count, p.present()),
        ));
    }
    if p.distinct_count <= HANDFUL {
        return None;
    }
    Some(Decision {
        role: Role::Sensitive,
        reason: format!("a {kind} with {} categories: what the record says about a person (a diagnosis, a drug, a procedure); codes and their descriptions share one role. Published unchanged and counted for l-diversity; make it QUASI IDENTIFIER if an adversary could know it, INSENSITIVE if it says nothing about anyone", p.distinct_count),
        review: true,
    })
}

/// A quasi-identifier whose values cannot be the leaves of a hierarchy of rows.
fn unlistable(p: &Profile) -> Decision {
    let why = if p.distinct.is_none() {
        "too many values to list in a hierarchy"
    } else {
        "an empty or '*' value, which no hierarchy of rows can hold as a leaf"
    };
    Decision {
        role: Role::Identifier,
        reason: format!("a quasi-identifier with {why}: left out; to keep it, write a SELECT hierarchy for it and make it a QUASI IDENTIFIER"),
        review: true,
    }
}

/// Month, then coarser parts for the span of the dates: year and decade over more than ten
/// years, quarter and year within ten.
fn date_parts(p: &Profile) -> Vec<&'static str> {
    let years = p.distinct.as_ref().map_or(100, |d| {
        let ys: Vec<i32> = d
            .iter()
            .filter_map(|v| crate::hierarchy::parse_date(v).map(|(y, _)| y))
            .collect();
        ys.iter()
            .max()
            .zip(ys.iter().min())
            .map_or(0, |(a, b)| a - b)
    });
    if years > 10 {
        vec!["month", "year", "decade"]
    } else {
        vec!["month", "quarter", "year"]
    }
}

/// Three nested band widths, the finest about an eighth of the range, each twice the last.
pub fn bands(p: &Profile) -> HierarchyPlan {
    let (lo, hi) = p.range.unwrap_or((0.0, 1.0));
    let target = ((hi - lo) / 8.0).max(if p.integral { 1.0 } else { 1e-9 });
    let magnitude = 10f64.powf(target.log10().floor());
    let finest = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|w| *w >= target)
        .unwrap_or(10.0 * magnitude);
    let finest = if p.integral {
        finest.max(1.0).round()
    } else {
        finest
    };
    HierarchyPlan::Bands(vec![finest, finest * 2.0, finest * 4.0])
}

/// The values in sorted order grouped in runs of about the square root of their number
/// (ARX's ordered grouping), a last single value joining the run before it; up to three
/// values are leaves directly under `*`. A run is labelled by its position and size (`group
/// 2 of 7, 6 values`), never by its members: a label published in place of a rare value must
/// not carry that value or its neighbour. `None` when a value cannot be a leaf.
pub fn grouping(p: &Profile) -> Option<Vec<Vec<String>>> {
    let values = p.distinct.as_ref()?;
    if values
        .iter()
        .any(|v| v.is_empty() || v == crate::hierarchy::ROOT)
    {
        return None;
    }
    if values.len() <= 3 {
        return Some(values.iter().map(|v| vec![v.clone()]).collect());
    }
    let size = (values.len() as f64).sqrt().ceil() as usize;
    let mut runs: Vec<&[String]> = values.chunks(size).collect();
    if runs.len() > 1 && runs.last().is_some_and(|r| r.len() == 1) {
        let last = runs.len() - 1;
        let start = values.len() - runs[last - 1].len() - 1;
        runs.truncate(last - 1);
        runs.push(&values[start..]);
    }
    let mut rows = Vec::with_capacity(values.len());
    for (i, run) in runs.iter().enumerate() {
        let label = format!("group {} of {}, {} values", i + 1, runs.len(), run.len());
        // A label that is also a value would give the value two places in the tree.
        let label = if values.binary_search(&label).is_ok() {
            format!("{label} (group)")
        } else {
            label
        };
        rows.extend(run.iter().map(|v| vec![v.clone(), label.clone()]));
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};

    fn text(values: &[&str]) -> Profile {
        Profile::of(&StringArray::from(values.to_vec()))
    }

    #[test]
    fn names_that_identify() {
        for name in [
            "email",
            "FirstName",
            "last_name",
            "c_phone",
            "BillingAddress",
            "PostalCode",
            "ip_address",
            "Notes",
        ] {
            assert!(identifying_name(name, false).is_some(), "{name}");
        }
        assert!(
            identifying_name("name", true).is_some(),
            "a bare name in the entity table"
        );
        assert!(
            identifying_name("name", false).is_none(),
            "a product's name elsewhere"
        );
        assert!(identifying_name("ProductName", false).is_none());
        assert!(identifying_name("rating", false).is_none());
    }

    #[test]
    fn roles_follow_names_then_values() {
        let p = text(&["a@x.org", "b@y.org"]);
        let entity = Context {
            in_entity: true,
            ..Context::default()
        };
        let child = Context::default();
        assert_eq!(classify("contact", child, &p).role, Role::Identifier);
        let p = text(&["2005-05-24", "2005-06-01", "2006-01-02"]);
        assert!(matches!(
            classify("rented", child, &p).role,
            Role::Qi(HierarchyPlan::DateParts(_))
        ));
        let ages = Profile::of(&Int64Array::from(vec![23, 35, 47, 52, 61]));
        assert_eq!(
            classify("age", entity, &ages).role,
            Role::Qi(HierarchyPlan::Bands(vec![5.0, 10.0, 20.0]))
        );
        let amounts = Profile::of(&Float64Array::from(vec![2.99, 4.99, 0.99]));
        let d = classify("amount", child, &amounts);
        assert!(d.role == Role::Sensitive && d.review);
        let codes: Vec<String> = (0..50).map(|i| format!("K{i:03}")).collect();
        let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
        assert_eq!(
            classify("badge", entity, &text(&codes)).role,
            Role::Identifier
        );
        let nulls = Profile::of(&StringArray::from(vec![None::<&str>, None]));
        let d = classify("anything", child, &nulls);
        assert!(d.role == Role::Identifier && d.reason.contains("NULL"));
    }

    #[test]
    fn codes_and_their_descriptions_are_sensitive_for_review() {
        let mut codes = Vec::new();
        let mut texts = Vec::new();
        for i in 0..20 {
            codes.extend(std::iter::repeat_n(format!("{}", 44054006 + i), 3));
            texts.extend(std::iter::repeat_n(format!("Disorder {i}"), 3));
        }
        let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let cx = Context::default();
        for (name, values) in [
            ("CODE", &codes),
            ("REASONCODE", &codes),
            ("icd_code", &codes),
            ("DESCRIPTION", &texts),
            ("REASONDESCRIPTION", &texts),
        ] {
            let d = classify(name, cx, &text(values));
            assert!(d.role == Role::Sensitive && d.review, "{name}: {d:?}");
        }
        // A numbered diagnosis column is a diagnosis.
        let d = classify("DIAGNOSIS1", cx, &text(&codes));
        assert!(d.role == Role::Sensitive && d.review, "{d:?}");
        // Free text is still an identifier, whatever its name.
        let notes = vec!["Patient reports a mild headache after the second dose, no fever"; 3];
        assert_eq!(
            classify("DESCRIPTION", cx, &text(&notes)).role,
            Role::Identifier
        );
    }

    #[test]
    fn values_each_held_by_few_people_identify() {
        let names: Vec<String> = (0..40).map(|i| format!("Crist{}", i / 2)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let cx = Context {
            spread: Some(super::super::holders::Spread {
                values: 20,
                rare: 20,
            }),
            ..Context::default()
        };
        let d = classify("LAST", cx, &text(&names));
        assert_eq!(d.role, Role::Identifier, "{d:?}");
        assert!(d.reason.contains("20 of its 20 values"), "{}", d.reason);
        let shared = Context {
            spread: Some(super::super::holders::Spread {
                values: 20,
                rare: 2,
            }),
            ..Context::default()
        };
        assert!(matches!(
            classify("LAST", shared, &text(&names)).role,
            Role::Qi(HierarchyPlan::Rows(_))
        ));
    }

    #[test]
    fn measures_of_many_values_are_marked_and_deep_dates_are_coarse() {
        let many = Profile::of(&Float64Array::from(vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]));
        let d = classify("outstanding", Context::default(), &many);
        assert!(d.role == Role::Insensitive && d.review, "{d:?}");
        let days = text(&["2005-05-24", "2005-06-01", "2006-01-02"]);
        let deep = Context {
            deep: true,
            ..Context::default()
        };
        assert_eq!(
            classify("paid", deep, &days).role,
            Role::Qi(HierarchyPlan::DateParts(vec!["quarter", "year"]))
        );
        let decades = text(&["1995-05-24", "2005-06-01", "2016-01-02"]);
        assert_eq!(
            classify("START", deep, &decades).role,
            Role::Qi(HierarchyPlan::DateParts(vec!["year", "decade"]))
        );
    }

    #[test]
    fn categories_are_grouped_in_order() {
        let mut values = Vec::new();
        for v in ["G", "PG", "PG-13", "R", "NC-17"] {
            values.extend([v; 4]);
        }
        let d = classify("rating", Context::default(), &text(&values));
        let Role::Qi(HierarchyPlan::Rows(rows)) = d.role else {
            panic!("a category is a QI: {d:?}");
        };
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[0], ["G", "group 1 of 2, 3 values"]);
        assert_eq!(rows[4], ["R", "group 2 of 2, 2 values"]);
        // No label carries a value: a label stands in for rare values too.
        for row in &rows {
            assert!(!row[1].contains(&row[0]), "{row:?}");
        }
        // A last single value joins the run before it: a group of one is no group.
        let mut values: Vec<&str> = Vec::new();
        for v in "abcdefghijklm".split("").filter(|v| !v.is_empty()) {
            values.extend([v; 3]);
        }
        let Some(rows) = grouping(&text(&values)) else {
            panic!("thirteen values group");
        };
        assert_eq!(rows.len(), 13);
        assert_eq!(rows[12], ["m", "group 3 of 3, 5 values"]);
        assert_eq!(rows[0], ["a", "group 1 of 3, 4 values"]);
        let blank = text(&["", "a", "b", "a", "b", "a"]);
        assert_eq!(grouping(&blank), None);
    }
}
