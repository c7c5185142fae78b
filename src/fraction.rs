//! A share written in the declarations (a rule's p), kept as an exact fraction: `0.33` is
//! 33/100 and `1/3` is one third, so a boundary such as 3/4 >= 3/4 is decided exactly by
//! whoever compares it (the algorithm's budgets and the verifier's recount alike).

/// p as an exact fraction in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fraction {
    pub num: u64,
    pub den: u64,
}

impl Fraction {
    /// `num / den`, or `None` outside (0, 1].
    pub fn new(num: u64, den: u64) -> Option<Fraction> {
        (den > 0 && num > 0 && num <= den).then_some(Fraction { num, den })
    }

    /// A decimal written in the declarations (`0.33` is 33/100, not 1/3: decision D2).
    pub fn from_decimal(text: &str) -> Option<Fraction> {
        let text = text.trim();
        if let Some((n, d)) = text.split_once('/') {
            return Fraction::new(n.trim().parse().ok()?, d.trim().parse().ok()?);
        }
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if frac.len() > 18 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let den = 10u64.checked_pow(frac.len() as u32)?;
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let frac: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().ok()?
        };
        Fraction::new(whole.checked_mul(den)?.checked_add(frac)?, den)
    }
}

impl std::fmt::Display for Fraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (mut a, mut b) = (self.num, self.den);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        write!(f, "{}/{}", self.num / a, self.den / a)
    }
}

impl serde::Serialize for Fraction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fraction {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Fraction, D::Error> {
        let text = String::deserialize(d)?;
        Fraction::from_decimal(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a share in (0, 1]: {text}")))
    }
}
