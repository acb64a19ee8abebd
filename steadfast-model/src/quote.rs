//! Input quoted in messages, capped: a refusal names the offending value without
//! repeating all of it, so a megabyte of input never becomes a megabyte of stderr.

/// The most characters of a value a message repeats.
pub const MAX_QUOTED_CHARS: usize = 200;

/// `text` in backticks, or its first [`MAX_QUOTED_CHARS`] characters with an ellipsis
/// and the whole length: `` `abc…` (15728640 bytes) ``.
pub fn quote(text: &str) -> String {
    match cut(text) {
        None => format!("`{text}`"),
        Some(head) => format!("`{head}…` ({} bytes)", text.len()),
    }
}

/// A message that may repeat input (a parser's error, a value's text), capped as
/// [`quote`] caps a value, without the backticks.
pub fn shorten(text: &str) -> String {
    match cut(text) {
        None => text.to_string(),
        Some(head) => format!("{head}… ({} bytes)", text.len()),
    }
}

/// The first [`MAX_QUOTED_CHARS`] characters of `text`, when it has more.
fn cut(text: &str) -> Option<&str> {
    let (end, _) = text.char_indices().nth(MAX_QUOTED_CHARS)?;
    Some(&text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole_and_long_ones_cut_with_their_length() {
        assert_eq!(quote("paxos"), "`paxos`");
        let long = "é".repeat(300);
        let quoted = quote(&long);
        assert_eq!(quoted, format!("`{}…` (600 bytes)", "é".repeat(200)));
        assert_eq!(shorten(&"x".repeat(200)), "x".repeat(200));
        assert!(shorten(&"x".repeat(201)).ends_with("x… (201 bytes)"));
    }
}
