//! The one name rule of every registry (agent kinds, environments, problems and their priors): a
//! name is found whatever its case and whatever `-` or `_` it holds, on both sides, so
//! `my_agent`, `My-Agent` and `myagent` are one name. Every lookup goes through [`key`]; the
//! bindings hand the same function to Python, whose lookups call it too.

/// The form two names are compared in: lower case, without `-` and `_`.
pub fn key(name: &str) -> String {
    name.chars().filter(|c| *c != '-' && *c != '_').flat_map(char::to_lowercase).collect()
}

/// The item of `items` whose name (`name_of`) is `name` under the rule.
pub fn find<'a, T>(items: &'a [T], name: &str, name_of: impl Fn(&T) -> &str) -> Option<&'a T> {
    let wanted = key(name);
    items.iter().find(|item| key(name_of(item)) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_dashes_and_underscores_are_ignored_on_both_sides() {
        for spelling in ["my_agent", "My-Agent", "myagent", "MY_AGENT", "m-y_a-gent"] {
            assert_eq!(key(spelling), "myagent", "{spelling}");
        }
        let items = ["RiverSwim-Osband", "my_agent"];
        assert_eq!(find(&items, "riverswim_osband", |s| s), Some(&"RiverSwim-Osband"));
        assert_eq!(find(&items, "MyAgent", |s| s), Some(&"my_agent"));
        assert_eq!(find(&items, "River Swim", |s| s), None);
    }
}
