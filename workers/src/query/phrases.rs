//! Phrases: the parts of a question that names several things (`each order's number, its
//! customer's email and the items' prices`), each searched on its own so that every thing
//! named can reach the candidates, not only the most prominent one. A question splits at
//! punctuation that separates items and at the coordinating words of English (a closed class;
//! nothing here depends on a schema's vocabulary).

/// Words that join the things a question lists.
const JOINERS: &[&str] = &[
    "and",
    "or",
    "plus",
    "then",
    "also",
    "as",
    "well",
    "including",
];

/// The question's phrases of at least one word, in order; one phrase (the whole question)
/// when it lists nothing.
pub fn of(question: &str) -> Vec<String> {
    let mut phrases = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut close = |current: &mut Vec<&str>| {
        if !current.is_empty() {
            phrases.push(current.join(" "));
            current.clear();
        }
    };
    for piece in question.split_inclusive([',', ';', ':', '(', ')', '/', '\n']) {
        let ends = piece.ends_with([',', ';', ':', '(', ')', '/', '\n']);
        let body = if ends {
            &piece[..piece.len() - 1]
        } else {
            piece
        };
        for word in body.split_whitespace() {
            if JOINERS.contains(&word.to_lowercase().as_str()) {
                close(&mut current);
            } else {
                current.push(word);
            }
        }
        if ends {
            close(&mut current);
        }
    }
    close(&mut current);
    phrases
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_list_splits_at_its_commas_and_joining_words() {
        assert_eq!(
            super::of("each van's plate, its driver's name and the depot it parks at"),
            [
                "each van's plate",
                "its driver's name",
                "the depot it parks at"
            ]
        );
        assert_eq!(super::of("lamp wattage"), ["lamp wattage"]);
        assert_eq!(super::of("  "), Vec::<String>::new());
    }
}
