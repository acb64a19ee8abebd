//! Command-line parsing, by hand: model settings are declared by each model at run time
//! (`--grants 3`), which a static argument parser cannot know in advance.

use std::fmt;
pub(crate) use steadfast_model::quote::quote;

/// A usage error: printed on one line, exit status 2.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a command ended without its result: the arguments (exit status 2) or the run
/// itself (exit status 3: a file that cannot be written, a budget spent, a runtime that
/// failed). `main` prints either on one line; the memory watcher, which must end the
/// process from its own thread, is the only other place that exits with 3.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The command line is wrong.
    Usage(UsageError),
    /// The run failed while running.
    Run(String),
}

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Failure {
        Failure::Usage(e)
    }
}

impl Failure {
    /// The exit status and the message.
    pub(crate) fn status_and_message(&self) -> (u8, &str) {
        match self {
            Failure::Usage(UsageError(message)) => (2, message),
            Failure::Run(message) => (crate::budget::RUN_FAILURE, message),
        }
    }
}

/// What a command returns: its exit status, or why it has none.
pub(crate) type Outcome = Result<std::process::ExitCode, Failure>;

/// `message` on one line, whatever it quotes from a file or an argument: line breaks,
/// other control characters and terminal escapes are written as escapes.
pub(crate) fn one_line(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Parsed arguments after the command word: positionals, `--flag` switches, and
/// `--name value` options, in the order given.
#[derive(Debug, Default)]
pub(crate) struct Args {
    /// Arguments without a leading `--`.
    pub positional: Vec<String>,
    /// `--name value` pairs (also `--name=value`).
    pub options: Vec<(String, String)>,
    /// `--name` switches without a value.
    pub switches: Vec<String>,
}

impl Args {
    /// Splits `raw`; names in `switches` take no value, every other `--name` takes one.
    pub(crate) fn parse(raw: &[String], switches: &[&str]) -> Result<Args, UsageError> {
        let mut args = Args::default();
        let mut i = 0;
        while i < raw.len() {
            let word = &raw[i];
            if let Some(name) = word.strip_prefix("--") {
                if let Some((n, v)) = name.split_once('=') {
                    if switches.contains(&n) {
                        return Err(UsageError(format!(
                            "`--{n}` takes no value, got {}",
                            quote(v)
                        )));
                    }
                    args.options.push((n.to_string(), v.to_string()));
                } else if switches.contains(&name) {
                    args.switches.push(name.to_string());
                } else {
                    let value = raw
                        .get(i + 1)
                        .ok_or_else(|| UsageError(format!("`--{name}` needs a value")))?;
                    args.options.push((name.to_string(), value.clone()));
                    i += 1;
                }
            } else {
                args.positional.push(word.clone());
            }
            i += 1;
        }
        Ok(args)
    }

    /// Whether a switch was given.
    pub(crate) fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// The last value of an option (later ones win), left in place.
    pub(crate) fn peek(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Removes and returns the last value of an option (later ones win).
    pub(crate) fn take(&mut self, name: &str) -> Option<String> {
        let mut found = None;
        self.options.retain(|(n, v)| {
            if n == name {
                found = Some(v.clone());
                false
            } else {
                true
            }
        });
        found
    }

    /// Removes every occurrence of a repeatable option, in the order given.
    pub(crate) fn take_all(&mut self, name: &str) -> Vec<String> {
        let mut found = Vec::new();
        self.options.retain(|(n, v)| {
            if n == name {
                found.push(v.clone());
                false
            } else {
                true
            }
        });
        found
    }

    /// Removes and parses a numeric option within `min..=max`.
    pub(crate) fn take_number(
        &mut self,
        name: &str,
        default: usize,
        min: usize,
        max: usize,
    ) -> Result<usize, UsageError> {
        match self.take(name) {
            None => Ok(default),
            // Digits only: `str::parse` would also take a leading `+`.
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) && text.bytes().all(|b| b.is_ascii_digit()) => {
                    Ok(n)
                }
                _ => Err(UsageError(format!(
                    "`--{name}` must be a number within {min}..={max}, got {}",
                    quote(&text)
                ))),
            },
        }
    }

    /// Fails if any option or switch is left (none is known to the caller).
    pub(crate) fn no_options(&self, command: &str) -> Result<(), UsageError> {
        match (self.options.first(), self.switches.first()) {
            (Some((name, _)), _) | (None, Some(name)) => Err(UsageError(format!(
                "unknown option {} for {command}",
                quote(&format!("--{name}"))
            ))),
            (None, None) => Ok(()),
        }
    }

    /// Fails if positionals beyond `allowed` remain.
    pub(crate) fn no_more_positionals(&self, allowed: usize) -> Result<(), UsageError> {
        match self.positional.get(allowed) {
            Some(extra) => Err(UsageError(format!("unexpected argument {}", quote(extra)))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_positionals_switches_and_options() {
        let mut a = Args::parse(
            &strings(&["leadership", "--design", "fixed", "--json", "--grants=3"]),
            &["json"],
        )
        .unwrap();
        assert_eq!(a.positional, vec!["leadership"]);
        assert!(a.switch("json"));
        assert_eq!(a.take("design").as_deref(), Some("fixed"));
        assert_eq!(a.options, vec![("grants".to_string(), "3".to_string())]);
    }

    #[test]
    fn a_switch_with_a_value_and_a_signed_number_are_refused() {
        let e = Args::parse(&strings(&["--json=1"]), &["json"]).unwrap_err();
        assert_eq!(e.0, "`--json` takes no value, got `1`");
        let mut a = Args::parse(&strings(&["--threads=+3"]), &[]).unwrap();
        assert!(a.take_number("threads", 1, 1, 64).is_err());
    }

    #[test]
    fn missing_value_and_bad_number_are_usage_errors() {
        let e = Args::parse(&strings(&["--design"]), &[]).unwrap_err();
        assert_eq!(e.0, "`--design` needs a value");
        let mut a = Args::parse(&strings(&["--threads", "0"]), &[]).unwrap();
        let e = a.take_number("threads", 1, 1, 64).unwrap_err();
        assert!(e.0.contains("within 1..=64"), "{e}");
    }
}
