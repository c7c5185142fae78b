//! `algorithm = 'lattice'` through the binary on a warehouse with child tables: the release
//! at the chosen node verifies and stays within its budget, and a budget below the shape
//! floor is refused with the floor and the share that would do.

use crate::common::{realworld_workspace, relanon, stderr, stdout};

#[test]
fn rental_is_released_by_global_recoding_or_refused_below_its_shape_floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let decl = realworld_workspace(dir.path(), "rental", "rental", &[]);
    let d = decl.to_str().expect("UTF-8 path");
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            d,
            "--with",
            "algorithm = 'lattice', max_suppression = 0",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("suppresses 6 of the 120 entities (5.0%)")
            && err.contains("max_suppression >= 0.05,"),
        "{err}"
    );
    assert!(!dir.path().join("rental-release.sqlite").exists());
    let o = relanon(
        dir.path(),
        &[
            "anonymize",
            d,
            "--json",
            "--key-map",
            "keys.json",
            "--with",
            "algorithm = 'lattice', max_suppression = 0.05",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report");
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["suppressed_entities"], 6, "{r}");
    assert!(r["smallest_ec"].as_u64().expect("smallest") >= 5, "{r}");
    // The node: one level per QI column, within its hierarchy.
    let recoding = r["recoding"].as_array().expect("the node is reported");
    let columns: Vec<&str> = recoding
        .iter()
        .map(|c| c["column"].as_str().expect("name"))
        .collect();
    assert_eq!(
        columns,
        [
            "customer.create_date",
            "rental.rental_date",
            "rental.inventory_id",
            "payment.payment_date"
        ]
    );
    for c in recoding {
        assert!(c["level"].as_u64() <= c["height"].as_u64(), "{c}");
    }
    let v = relanon(
        dir.path(),
        &[
            "verify",
            d,
            "--key-map",
            "keys.json",
            "--with",
            "algorithm = 'lattice', max_suppression = 0.05",
        ],
    );
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}
