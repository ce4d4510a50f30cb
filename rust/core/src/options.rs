//! Keyword options as a front end hands them over: a [`ParamValue`] per name, read into a typed
//! options struct that has a default for every optional key and is validated once
//! ([`Options::from_pairs`]). Agent parameters use the same values ([`crate::agents::build`]), and
//! both describe their parameters with the same typed [`ParamType`] and [`Range`].

use std::str::FromStr;

use crate::error::{BbrlError, Result};
use crate::invalid;

/// A parameter or option value as a front end hands it over.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Float(f64),
    Int(i64),
    /// An integer above `i64::MAX` (a 64-bit seed).
    UInt(u64),
    Bool(bool),
    Text(String),
}

/// A value as users wrote it: `1.5`, `-3`, `true`, `"x"`.
impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::UInt(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Text(v) => write!(f, "{v:?}"),
        }
    }
}

impl ParamValue {
    fn wrong(&self, key: &str, what: &str) -> BbrlError {
        invalid!("option '{key}' must be {what}, got {self:?}")
    }

    /// A number (an integer is converted).
    pub fn as_f64(&self, key: &str) -> Result<f64> {
        match *self {
            ParamValue::Float(v) => Ok(v),
            ParamValue::Int(v) => Ok(v as f64),
            ParamValue::UInt(v) => Ok(v as f64),
            _ => Err(self.wrong(key, "a number")),
        }
    }

    /// A non-negative 64-bit integer.
    pub fn as_u64(&self, key: &str) -> Result<u64> {
        match *self {
            ParamValue::Int(v) => u64::try_from(v).map_err(|_| self.wrong(key, "an integer >= 0")),
            ParamValue::UInt(v) => Ok(v),
            _ => Err(self.wrong(key, "an integer >= 0")),
        }
    }

    /// A non-negative integer that fits a `usize`.
    pub fn as_usize(&self, key: &str) -> Result<usize> {
        usize::try_from(self.as_u64(key)?).map_err(|_| self.wrong(key, "a smaller integer"))
    }

    pub fn as_bool(&self, key: &str) -> Result<bool> {
        match *self {
            ParamValue::Bool(v) => Ok(v),
            _ => Err(self.wrong(key, "a bool")),
        }
    }

    pub fn as_str(&self, key: &str) -> Result<&str> {
        match self {
            ParamValue::Text(v) => Ok(v),
            _ => Err(self.wrong(key, "a string")),
        }
    }

    /// A string parsed by the enum's [`FromStr`] (whose error lists the allowed values).
    pub fn parse<T: FromStr<Err = BbrlError>>(&self, key: &str) -> Result<T> {
        self.as_str(key)?.parse()
    }
}

/// The type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    Float,
    Int,
    Bool,
    Text,
}

impl ParamType {
    /// `"float"`, `"int"`, `"bool"` or `"str"` (Python's names).
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::Float => "float",
            ParamType::Int => "int",
            ParamType::Bool => "bool",
            ParamType::Text => "str",
        }
    }
}

/// One end of a numeric [`Range`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    Unbounded,
    /// The value itself is allowed.
    Inclusive(f64),
    /// Values up to (not including) this one.
    Exclusive(f64),
}

impl Bound {
    /// The bound's value (`None`: unbounded) and whether it is allowed itself.
    pub fn value(self) -> Option<(f64, bool)> {
        match self {
            Bound::Unbounded => None,
            Bound::Inclusive(v) => Some((v, true)),
            Bound::Exclusive(v) => Some((v, false)),
        }
    }
}

/// The values a parameter allows, typed: the checks, the messages, the docs and the sweep of
/// every option read it (one source).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// Every value of the type (a flag).
    Any,
    /// A finite number between two bounds.
    Number { min: Bound, max: Bound },
    /// One of these strings.
    Choices(&'static [&'static str]),
    /// A text the builder parses (a formula), described for users; the builder checks it.
    Parsed(&'static str),
}

impl Range {
    /// `>= min`.
    pub const fn at_least(min: f64) -> Self {
        Range::Number { min: Bound::Inclusive(min), max: Bound::Unbounded }
    }

    /// `> min`.
    pub const fn above(min: f64) -> Self {
        Range::Number { min: Bound::Exclusive(min), max: Bound::Unbounded }
    }

    /// `[min, max]`, both included.
    pub const fn between(min: f64, max: f64) -> Self {
        Range::Number { min: Bound::Inclusive(min), max: Bound::Inclusive(max) }
    }

    /// The range as users read it: `>= 1`, `> 0`, `[0, 1]`, `"paper" or "tabularl"`.
    pub fn describe(&self) -> String {
        match *self {
            Range::Any => "true or false".to_string(),
            Range::Number { min, max } => match (min.value(), max.value()) {
                (None, None) => "any finite number".to_string(),
                (Some((lo, true)), None) => format!(">= {}", number(lo)),
                (Some((lo, false)), None) => format!("> {}", number(lo)),
                (None, Some((hi, true))) => format!("<= {}", number(hi)),
                (None, Some((hi, false))) => format!("< {}", number(hi)),
                (Some((lo, li)), Some((hi, hi_in))) => {
                    format!(
                        "{}{}, {}{}",
                        if li { "[" } else { "(" },
                        number(lo),
                        number(hi),
                        if hi_in { "]" } else { ")" }
                    )
                }
            },
            Range::Choices(names) => {
                let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
                match quoted.as_slice() {
                    [] => String::new(),
                    [one] => one.clone(),
                    [init @ .., last] => format!("{} or {last}", init.join(", ")),
                }
            }
            Range::Parsed(text) => text.to_string(),
        }
    }

    /// What a value must be, for messages: `>= 1`, `in [0, 1]`, `one of "paper" or "tabularl"`.
    pub fn requirement(&self) -> String {
        match self {
            Range::Number { min: Bound::Unbounded, .. } | Range::Number { max: Bound::Unbounded, .. } => {
                self.describe()
            }
            Range::Number { .. } => format!("in {}", self.describe()),
            Range::Choices(_) => format!("one of {}", self.describe()),
            _ => self.describe(),
        }
    }

    /// Whether the number `v` is allowed (a range that is not numeric allows none).
    pub fn contains(&self, v: f64) -> bool {
        let Range::Number { min, max } = *self else { return false };
        let above = match min.value() {
            None => true,
            Some((lo, inclusive)) => v > lo || (inclusive && v == lo),
        };
        let below = match max.value() {
            None => true,
            Some((hi, inclusive)) => v < hi || (inclusive && v == hi),
        };
        v.is_finite() && above && below
    }
}

/// A bound as the ranges write it: `1`, `0.51`, `1e-9`.
fn number(v: f64) -> String {
    let plain = format!("{v}");
    let exponent = format!("{v:e}");
    if exponent.len() < plain.len() {
        exponent
    } else {
        plain
    }
}

/// A typed options struct read from keyword values.
pub trait Options: Default {
    /// Every key [`Options::set`] knows.
    const KEYS: &'static [&'static str];
    /// The keys without a default: [`Options::from_pairs`] refuses to go without them.
    const REQUIRED: &'static [&'static str] = &[];

    /// Sets option `key`; an unknown key is an error listing [`Options::KEYS`] ([`unknown_key`]).
    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()>;

    /// Checks the options together (ranges, combinations).
    fn validate(&self) -> Result<()>;

    /// The defaults overridden by `pairs`, checked for missing keys and validated.
    fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a ParamValue)>) -> Result<Self> {
        let mut options = Self::default();
        let mut given = Vec::new();
        for (key, value) in pairs {
            options.set(key, value)?;
            given.push(key);
        }
        if let Some(missing) = Self::REQUIRED.iter().find(|k| !given.contains(k)) {
            return Err(invalid!("missing option '{missing}'"));
        }
        options.validate()?;
        Ok(options)
    }
}

/// The error for an option `key` that is not one of `known`.
pub fn unknown_key(key: &str, known: &[&str]) -> BbrlError {
    invalid!("unknown option '{key}'; known options: {}", known.join(", "))
}

/// The error of a [`FromStr`] that does not know `value`: names `what` and every allowed value.
pub fn unknown_name(what: &str, value: &str, allowed: &[&str]) -> BbrlError {
    let allowed: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
    invalid!("{what} must be one of {}, got {value:?}", allowed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug)]
    struct Two {
        a: f64,
        n: usize,
    }

    impl Options for Two {
        const KEYS: &'static [&'static str] = &["a", "n"];
        const REQUIRED: &'static [&'static str] = &["a"];
        fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
            match key {
                "a" => self.a = value.as_f64(key)?,
                "n" => self.n = value.as_usize(key)?,
                _ => return Err(unknown_key(key, Self::KEYS)),
            }
            Ok(())
        }
        fn validate(&self) -> Result<()> {
            if self.a < 0.0 {
                return Err(invalid!("a must be >= 0"));
            }
            Ok(())
        }
    }

    #[test]
    fn reads_defaults_checks_and_validates() {
        let a = ParamValue::Int(2);
        let two = Two::from_pairs([("a", &a)]).unwrap();
        assert_eq!((two.a, two.n), (2.0, 0));
        let e = Two::from_pairs([]).unwrap_err().to_string();
        assert!(e.contains("missing option 'a'"), "{e}");
        let x = ParamValue::Bool(true);
        let e = Two::from_pairs([("a", &a), ("x", &x)]).unwrap_err().to_string();
        assert!(e.contains("unknown option 'x'") && e.contains("a, n"), "{e}");
        let e = Two::from_pairs([("a", &a), ("n", &ParamValue::Int(-1))]).unwrap_err().to_string();
        assert!(e.contains("'n' must be an integer >= 0"), "{e}");
        assert!(Two::from_pairs([("a", &ParamValue::Float(-1.0))]).is_err());
    }

    #[test]
    fn values_convert_or_say_why_not() {
        assert_eq!(ParamValue::UInt(u64::MAX).as_u64("seed").unwrap(), u64::MAX);
        assert!(ParamValue::Float(1.0).as_u64("seed").is_err());
        assert!(ParamValue::Text("x".into()).as_f64("a").is_err());
        assert_eq!(ParamValue::Text("x".into()).as_str("a").unwrap(), "x");
        assert!(ParamValue::Int(1).as_bool("b").is_err());
    }
}
