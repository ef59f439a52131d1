//! Words: the one tokenizer the analysis of a question runs. A question is scanned once into
//! runs of word characters (letters, digits, `_` and `'`), each with its byte offset; every
//! reading of it takes the parts of those runs it needs: the grammar of [`super::intent`]
//! the lowercase words of letters (`shopper's`, with its apostrophe), its phrases those of
//! letters and digits, and [`super::spelling`] the identifier-like parts (`PR_BODY`, `PR2`)
//! it may replace in place.
//!
//! (The lexical index reads a question with its own analyzer, the one its documents were
//! indexed with, and the named-member rule reads coordinates, whose `.`, `(` and `@` are not
//! word characters; the model reads it with its own tokenizer.)

use std::cell::OnceCell;

/// A question's runs of word characters, and each reading of them made once, when first
/// asked for (intent and the phrases read the same text several times).
#[derive(Debug, Clone)]
pub struct Words<'q> {
    text: &'q str,
    /// Byte ranges of the runs, in order.
    runs: Vec<(usize, usize)>,
    letters: OnceCell<Vec<String>>,
    alphanumeric: OnceCell<Vec<String>>,
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '\''
}

impl<'q> Words<'q> {
    pub fn of(text: &'q str) -> Self {
        let mut runs = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (word_char(c), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    runs.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            runs.push((s, text.len()));
        }
        Words {
            text,
            runs,
            letters: OnceCell::new(),
            alphanumeric: OnceCell::new(),
        }
    }

    pub fn text(&self) -> &'q str {
        self.text
    }

    /// The parts of the runs made of characters `keep` accepts (a subset of the word
    /// characters), with their byte offsets.
    pub fn parts(&self, keep: fn(char) -> bool) -> impl Iterator<Item = (usize, &'q str)> + '_ {
        let text = self.text;
        self.runs.iter().flat_map(move |&(start, end)| {
            let run = &text[start..end];
            run.split(move |c: char| !keep(c))
                .filter(|part| !part.is_empty())
                .map(move |part| {
                    (
                        start + (part.as_ptr() as usize - run.as_ptr() as usize),
                        part,
                    )
                })
        })
    }

    /// The words of a sentence, lowercased: letters and apostrophes (digits split them).
    pub fn letters(&self) -> &[String] {
        self.letters
            .get_or_init(|| self.lowercase(|c| c.is_alphabetic() || c == '\''))
    }

    /// Letters, digits and apostrophes, lowercased: the words of a phrase (`top10`).
    pub fn alphanumeric(&self) -> &[String] {
        self.alphanumeric
            .get_or_init(|| self.lowercase(|c| c.is_alphanumeric() || c == '\''))
    }

    /// ASCII letters, digits and `_`, as written, with their byte offsets: so a part of
    /// `PR_BODY` or `PR2` is never taken for a word of its own.
    pub fn identifiers(&self) -> impl Iterator<Item = (usize, &'q str)> + '_ {
        self.parts(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    fn lowercase(&self, keep: fn(char) -> bool) -> Vec<String> {
        self.parts(keep).map(|(_, w)| w.to_lowercase()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reading_takes_its_parts_of_one_scan() {
        let words = Words::of("Bake 2 loaves: the baker's top10 (PR_BODY, café)!");
        assert_eq!(
            words.letters(),
            ["bake", "loaves", "the", "baker's", "top", "pr", "body", "café"]
        );
        assert_eq!(
            words.alphanumeric(),
            ["bake", "2", "loaves", "the", "baker's", "top10", "pr", "body", "café"]
        );
        let identifiers: Vec<(usize, &str)> = words.identifiers().collect();
        assert_eq!(
            identifiers,
            [
                (0, "Bake"),
                (5, "2"),
                (7, "loaves"),
                (15, "the"),
                (19, "baker"),
                (25, "s"),
                (27, "top10"),
                (34, "PR_BODY"),
                (43, "caf")
            ]
        );
        assert!(Words::of("  ,;  ").letters().is_empty());
    }
}
