//! Model settings: bounds and environment assumptions as validated data.
//!
//! A model declares its parameters ([`Param`]) with defaults and limits; users override
//! them by name (`--grants 3`, `--late-signal true`). Validation happens here, once, so
//! that models can read settings without re-checking them and bad input never reaches a
//! checker as a panic.

use std::collections::BTreeMap;
use std::fmt;

use crate::quote::quote;

/// The type and limits of one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// An integer bound within `min..=max`.
    Int {
        /// Value when not overridden.
        default: u64,
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value (keeps state spaces and state fields small).
        max: u64,
    },
    /// An environment assumption that is either made or not.
    Bool {
        /// Value when not overridden.
        default: bool,
    },
    /// One of a fixed set of words.
    Choice {
        /// Value when not overridden.
        default: &'static str,
        /// Accepted words.
        options: &'static [&'static str],
    },
}

/// One setting a model accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Name on the command line, kebab-case, without dashes in front.
    pub name: &'static str,
    /// What the setting means, one line.
    pub help: &'static str,
    /// Type, default and limits.
    pub kind: ParamKind,
}

/// A validated value of a parameter.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// An integer bound.
    Int(u64),
    /// An assumption.
    Bool(bool),
    /// A word of a [`ParamKind::Choice`].
    Choice(&'static str),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Choice(c) => f.write_str(c),
        }
    }
}

/// An error in a design name or in settings, with a message naming the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError(pub String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

/// A complete, validated assignment of values to a model's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    values: BTreeMap<&'static str, Value>,
}

impl Settings {
    /// Every parameter at its default.
    pub fn defaults(params: &'static [Param]) -> Settings {
        let values = params
            .iter()
            .map(|p| {
                let v = match p.kind {
                    ParamKind::Int { default, .. } => Value::Int(default),
                    ParamKind::Bool { default } => Value::Bool(default),
                    ParamKind::Choice { default, .. } => Value::Choice(default),
                };
                (p.name, v)
            })
            .collect();
        Settings { values }
    }

    /// Defaults overridden by `(name, text)` pairs; every name must be a parameter and
    /// every text a valid value for it.
    pub fn parse(
        params: &'static [Param],
        overrides: &[(&str, &str)],
    ) -> Result<Settings, SettingsError> {
        let mut settings = Settings::defaults(params);
        for (name, text) in overrides {
            settings.set(params, name, text)?;
        }
        Ok(settings)
    }

    /// Overrides one parameter from its text form.
    pub fn set(
        &mut self,
        params: &'static [Param],
        name: &str,
        text: &str,
    ) -> Result<(), SettingsError> {
        let param = params.iter().find(|p| p.name == name).ok_or_else(|| {
            let known: Vec<_> = params.iter().map(|p| p.name).collect();
            SettingsError(format!(
                "unknown setting {} (known: {})",
                quote(name),
                known.join(", ")
            ))
        })?;
        let value = match param.kind {
            ParamKind::Int { min, max, .. } => {
                // Digits only: `str::parse` would also take a leading `+`.
                let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
                let n: u64 = text.parse().ok().filter(|_| digits).ok_or_else(|| {
                    SettingsError(format!(
                        "`{name}` needs a whole number, got {}",
                        quote(text)
                    ))
                })?;
                if n < min || n > max {
                    return Err(SettingsError(format!(
                        "`{name}` must be within {min}..={max}, got {n}"
                    )));
                }
                Value::Int(n)
            }
            ParamKind::Bool { .. } => match text {
                "true" | "yes" | "on" => Value::Bool(true),
                "false" | "no" | "off" => Value::Bool(false),
                _ => {
                    return Err(SettingsError(format!(
                        "`{name}` needs true or false, got {}",
                        quote(text)
                    )))
                }
            },
            ParamKind::Choice { options, .. } => {
                let word = options.iter().find(|o| **o == text).ok_or_else(|| {
                    SettingsError(format!(
                        "`{name}` must be one of {}, got {}",
                        options.join(", "),
                        quote(text)
                    ))
                })?;
                Value::Choice(word)
            }
        };
        self.values.insert(param.name, value);
        Ok(())
    }

    /// An integer setting. Panics only on a programming error (the model asking for a
    /// parameter it did not declare, or with the wrong type).
    pub fn int(&self, name: &str) -> u64 {
        match self.values.get(name) {
            Some(Value::Int(n)) => *n,
            other => panic!("model reads undeclared integer setting `{name}`: {other:?}"),
        }
    }

    /// A boolean setting (same contract as [`Settings::int`]).
    pub fn flag(&self, name: &str) -> bool {
        match self.values.get(name) {
            Some(Value::Bool(b)) => *b,
            other => panic!("model reads undeclared boolean setting `{name}`: {other:?}"),
        }
    }

    /// A choice setting (same contract as [`Settings::int`]).
    pub fn choice(&self, name: &str) -> &'static str {
        match self.values.get(name) {
            Some(Value::Choice(c)) => c,
            other => panic!("model reads undeclared choice setting `{name}`: {other:?}"),
        }
    }

    /// Every `(name, value)` pair, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(k, v)| (*k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[Param] = &[
        Param {
            name: "grants",
            help: "leadership grants",
            kind: ParamKind::Int {
                default: 2,
                min: 1,
                max: 5,
            },
        },
        Param {
            name: "late-signal",
            help: "terminal signal may arrive late",
            kind: ParamKind::Bool { default: false },
        },
        Param {
            name: "ordering",
            help: "which interleavings",
            kind: ParamKind::Choice {
                default: "all",
                options: &["a", "b", "all"],
            },
        },
    ];

    #[test]
    fn defaults_and_overrides() {
        let s = Settings::parse(PARAMS, &[("grants", "3"), ("late-signal", "yes")]).unwrap();
        assert_eq!(s.int("grants"), 3);
        assert!(s.flag("late-signal"));
        assert_eq!(s.choice("ordering"), "all");
    }

    #[test]
    fn bad_input_names_the_problem() {
        let e = Settings::parse(PARAMS, &[("grant", "3")]).unwrap_err();
        assert!(e.0.contains("unknown setting `grant`"), "{e}");
        let e = Settings::parse(PARAMS, &[("grants", "0")]).unwrap_err();
        assert_eq!(e.0, "`grants` must be within 1..=5, got 0");
        let e = Settings::parse(PARAMS, &[("grants", "x")]).unwrap_err();
        assert!(e.0.contains("whole number"), "{e}");
        let e = Settings::parse(PARAMS, &[("late-signal", "maybe")]).unwrap_err();
        assert!(e.0.contains("true or false"), "{e}");
        let e = Settings::parse(PARAMS, &[("ordering", "c")]).unwrap_err();
        assert!(e.0.contains("one of a, b, all"), "{e}");
    }
}
