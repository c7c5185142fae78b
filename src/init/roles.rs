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
    "description",
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

/// The role of an ordinary column (not a key, not a reference to another table).
pub fn classify(name: &str, in_entity: bool, p: &Profile) -> Decision {
    if p.present() == 0 {
        return Decision::new(
            Role::Identifier,
            "every value is NULL in the source: left out; give it a role if it will hold data",
        );
    }
    if let Some(word) = identifying_name(name, in_entity) {
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
        return Decision::new(
            Role::Qi(date_parts(p)),
            "a date: generalized to its month, then coarser",
        );
    }
    let w = words(name);
    // A phone is an identifier, caught above; the other traits are demographics.
    let demographic =
        |x: &String| DEMOGRAPHIC.contains(&x.as_str()) || PERSONAL_TRAITS.contains(&x.as_str());
    if let Some(word) = w.iter().find(|x| demographic(x)) {
        if p.numeric {
            return Decision::new(
                Role::Qi(bands(p)),
                format!("a demographic number ('{word}'): generalized to bands"),
            );
        }
        return match grouping(p) {
            Some(rows) => Decision::new(
                Role::Qi(HierarchyPlan::Rows(rows)),
                format!("a demographic or a place ('{word}', {} value(s)): generalized through groups of its values; edit the groups", p.distinct_count),
            ),
            None => unlistable(p),
        };
    }
    if let Some(word) = w.iter().find(|x| SENSITIVE.contains(&x.as_str())) {
        return Decision {
            role: Role::Sensitive,
            reason: format!("its name ('{word}') suggests health or money: published unchanged and counted for l-diversity; make it INSENSITIVE if it is not sensitive, or QUASI IDENTIFIER if an adversary could know it"),
            review: true,
        };
    }
    let text_or_whole = !p.numeric || p.integral;
    if p.nearly_unique() && text_or_whole {
        return Decision::new(
            Role::Identifier,
            format!("nearly every value is its own ({} distinct in {} rows): a name or code that singles out its row", p.distinct_count, p.present()),
        );
    }
    if p.numeric && !(p.integral && p.distinct_count <= 12) {
        return Decision::new(
            Role::Insensitive,
            "a measure whose name names no demographic: published unchanged",
        );
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

/// Month, then a coarser part for the span of the dates.
fn date_parts(p: &Profile) -> HierarchyPlan {
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
        HierarchyPlan::DateParts(vec!["month", "year", "decade"])
    } else {
        HierarchyPlan::DateParts(vec!["month", "quarter", "year"])
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
/// (ARX's ordered grouping), each run labelled by its first and last value; up to three
/// values are leaves directly under `*`. `None` when a value cannot be a leaf.
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
    let mut rows = Vec::with_capacity(values.len());
    for run in values.chunks(size) {
        let label = match run {
            [only] => format!("[{only}]"),
            [first, .., last] => format!("[{first} .. {last}]"),
            [] => continue,
        };
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
        assert_eq!(classify("contact", false, &p).role, Role::Identifier);
        let p = text(&["2005-05-24", "2005-06-01", "2006-01-02"]);
        assert!(matches!(
            classify("rented", false, &p).role,
            Role::Qi(HierarchyPlan::DateParts(_))
        ));
        let ages = Profile::of(&Int64Array::from(vec![23, 35, 47, 52, 61]));
        assert_eq!(
            classify("age", true, &ages).role,
            Role::Qi(HierarchyPlan::Bands(vec![5.0, 10.0, 20.0]))
        );
        let amounts = Profile::of(&Float64Array::from(vec![2.99, 4.99, 0.99]));
        let d = classify("amount", false, &amounts);
        assert!(d.role == Role::Sensitive && d.review);
        let codes: Vec<String> = (0..50).map(|i| format!("K{i:03}")).collect();
        let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
        assert_eq!(
            classify("badge", true, &text(&codes)).role,
            Role::Identifier
        );
        let nulls = Profile::of(&StringArray::from(vec![None::<&str>, None]));
        let d = classify("anything", false, &nulls);
        assert!(d.role == Role::Identifier && d.reason.contains("NULL"));
    }

    #[test]
    fn categories_are_grouped_in_order() {
        let mut values = Vec::new();
        for v in ["G", "PG", "PG-13", "R", "NC-17"] {
            values.extend([v; 4]);
        }
        let d = classify("rating", false, &text(&values));
        let Role::Qi(HierarchyPlan::Rows(rows)) = d.role else {
            panic!("a category is a QI: {d:?}");
        };
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[0], ["G", "[G .. PG]"]);
        assert_eq!(rows[4], ["R", "[PG-13 .. R]"]);
        let blank = text(&["", "a", "b", "a", "b", "a"]);
        assert_eq!(grouping(&blank), None);
    }
}
