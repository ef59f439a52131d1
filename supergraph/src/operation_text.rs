//! The pieces of operation text that [`crate::examples`] and [`crate::usage`] both write:
//! variables declared once by name, argument lists and object literals.

/// Declares a variable of type `ty` named after `wanted`, numbered when the name is taken
/// (`first`, `first2`); its name.
pub(crate) fn declare(
    variables: &mut Vec<(String, String)>,
    wanted: &str,
    ty: &impl ToString,
) -> String {
    let mut name = wanted.to_string();
    let mut n = 1;
    while variables.iter().any(|(taken, _)| *taken == name) {
        n += 1;
        name = format!("{wanted}{n}");
    }
    variables.push((name.clone(), ty.to_string()));
    name
}

/// `($a: T, $b: U)`, or nothing without variables.
pub(crate) fn definitions(variables: &[(String, String)]) -> String {
    if variables.is_empty() {
        return String::new();
    }
    let list: Vec<String> = variables
        .iter()
        .map(|(name, ty)| format!("${name}: {ty}"))
        .collect();
    format!("({})", list.join(", "))
}

/// `(a: x, b: y)`, or nothing without arguments.
pub(crate) fn arguments<N: AsRef<str>>(arguments: &[(N, String)]) -> String {
    if arguments.is_empty() {
        return String::new();
    }
    format!("({})", pairs(arguments))
}

/// `{a: x, b: y}`.
pub(crate) fn object<N: AsRef<str>>(fields: &[(N, String)]) -> String {
    format!("{{{}}}", pairs(fields))
}

fn pairs<N: AsRef<str>>(pairs: &[(N, String)]) -> String {
    let list: Vec<String> = pairs
        .iter()
        .map(|(name, value)| format!("{}: {value}", name.as_ref()))
        .collect();
    list.join(", ")
}
