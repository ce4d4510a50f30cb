//! The problem registry: the test distributions of the BBRL protocol, in the order tables show
//! them, then one problem per registered environment (through its [`EnvSpec`] entry, so a new
//! environment is a problem without another line). Adding a distribution problem is the function
//! building its [`Fdm`] (in its own file of this folder, or `model/problems.rs` for the original
//! three) and one entry of [`DISTRIBUTIONS`]. Every lookup follows the one name rule
//! ([`crate::names`]).

use super::spec::{PriorRule, ProblemSpec, Source};
use crate::envs::registry::ENVIRONMENTS;
use crate::error::Result;
use crate::invalid;
use crate::model::{problems, Fdm};

use crate::names;

/// The distribution problems of the protocol (names and long names are the original data files').
pub const DISTRIBUTIONS: &[ProblemSpec] = &[
    ProblemSpec {
        name: "GC",
        long_name: "GChain distribution",
        summary: "the Generalised Chain: 5 states, 3 actions sharing one prior; 2 on falling back to 0, 10 at the end",
        source: Source::Distribution { test: problems::generalized_chain, horizon: None },
    },
    ProblemSpec {
        name: "GDL",
        long_name: "GDouble-Loop distribution",
        summary: "the Generalised Double-Loop: 9 states, 2 actions; a safe loop paying 1, a risky one paying 2",
        source: Source::Distribution { test: problems::generalized_double_loop, horizon: None },
    },
    ProblemSpec {
        name: "Grid",
        long_name: "Grid distribution",
        summary: "a 5x5 grid, 4 moves that succeed or stay; the goal pays 10 and returns to the start",
        source: Source::Distribution { test: problems::grid, horizon: None },
    },
];

/// Every problem: [`DISTRIBUTIONS`], then one per registered environment.
pub fn all() -> Vec<ProblemSpec> {
    DISTRIBUTIONS.iter().copied().chain(ENVIRONMENTS.iter().map(ProblemSpec::of_environment)).collect()
}

/// The problem named `name` (any spelling of the name rule), or an error listing the names.
pub fn find(name: &str) -> Result<ProblemSpec> {
    let problems = all();
    names::find(&problems, name, |p| p.name).copied().ok_or_else(|| {
        let known: Vec<&str> = problems.iter().map(|p| p.name).collect();
        invalid!("unknown problem {name:?}; the problems are {}", known.join(", "))
    })
}

/// The prefix of a uniform prior's name (`UGC` is GC's uniform prior).
pub const UNIFORM_PREFIX: &str = "U";

/// The uniform-prior rule's tables: every concentration 1 over every next state, the same rewards
/// and start ([`uniform_names`] names it; [`distribution`] is the one lookup that applies both).
pub use crate::model::problems::uniform_prior;

/// The name and long name of the uniform prior of a distribution called `name` and `long_name`.
/// A name that already is a registered uniform prior's (`UGC`) is kept, so the rule applied twice
/// names what it gives once.
pub fn uniform_names(name: &str, long_name: &str) -> (String, String) {
    let is_uniform = name.strip_prefix(UNIFORM_PREFIX).is_some_and(|base| DISTRIBUTIONS.iter().any(|p| p.name == base));
    let name = if is_uniform { name.to_string() } else { format!("{UNIFORM_PREFIX}{name}") };
    let long_name =
        if long_name.starts_with("Uniform ") { long_name.to_string() } else { format!("Uniform {long_name}") };
    (name, long_name)
}

/// A distribution with the names tables show.
#[derive(Clone, Debug)]
pub struct NamedFdm {
    pub name: String,
    pub long_name: String,
    pub fdm: Fdm,
}

/// A distribution problem's test distribution or one of its priors, by name (`GC`, `ugc`, `U-Grid`
/// ...), or an error listing the names.
pub fn distribution(name: &str) -> Result<NamedFdm> {
    let wanted = names::key(name);
    for spec in DISTRIBUTIONS {
        for (prior, rule) in spec.priors() {
            if names::key(&prior) != wanted {
                continue;
            }
            let test = spec.test_distribution().expect("a distribution problem has a test distribution");
            return Ok(match rule {
                PriorRule::Accurate => {
                    NamedFdm { name: spec.name.to_string(), long_name: spec.long_name.to_string(), fdm: test }
                }
                PriorRule::Uniform => {
                    let (name, long_name) = uniform_names(spec.name, spec.long_name);
                    NamedFdm { name, long_name, fdm: uniform_prior(&test) }
                }
            });
        }
    }
    let known: Vec<String> = DISTRIBUTIONS.iter().flat_map(|p| p.priors().into_iter().map(|(n, _)| n)).collect();
    Err(invalid!("unknown distribution {name:?}; the distributions are {}", known.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::StartLaw;

    #[test]
    fn every_problem_and_prior_is_found_in_every_spelling() {
        let problems = all();
        assert_eq!(problems.len(), DISTRIBUTIONS.len() + ENVIRONMENTS.len());
        for spec in &problems {
            for spelling in [spec.name.to_string(), spec.name.to_lowercase(), spec.name.to_uppercase()] {
                assert_eq!(find(&spelling).unwrap().name, spec.name, "{spelling}");
            }
            for (prior, _) in spec.priors() {
                for spelling in [prior.to_lowercase(), prior.to_uppercase(), format!("{}-{}", &prior[..1], &prior[1..])]
                {
                    assert_eq!(distribution(&spelling).unwrap().name, prior, "{spelling}");
                }
            }
        }
        let keys: Vec<String> = problems.iter().map(|p| names::key(p.name)).collect();
        for (i, key) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(key), "two problems are one name under the rule: {key}");
        }
        let err = find("Chian").unwrap_err().to_string();
        assert!(problems.iter().all(|p| err.contains(p.name)), "{err}");
        assert!(distribution("XGC").unwrap_err().to_string().contains("UGrid"));
    }

    #[test]
    fn the_uniform_rule_names_and_fills_once() {
        assert_eq!(uniform_names("GC", "GChain distribution"), ("UGC".into(), "Uniform GChain distribution".into()));
        assert_eq!(uniform_names("UGC", "Uniform GChain distribution").0, "UGC");
        assert_eq!(uniform_names("Ufoo", "foo").0, "UUfoo");
        let ugrid = distribution("UGrid").unwrap();
        assert_eq!((ugrid.name.as_str(), ugrid.long_name.as_str()), ("UGrid", "Uniform Grid distribution"));
        assert!(ugrid.fdm.theta().iter().all(|&t| t == 1.0));
        assert_eq!(ugrid.fdm.rewards(), problems::grid().rewards());
    }

    #[test]
    fn facts_come_from_the_tables_and_the_simulators() {
        let gc = find("GC").unwrap().facts().unwrap();
        assert_eq!((gc.n_states, gc.n_actions, gc.reward_range, gc.horizon), (Some(5), 3, (0.0, 10.0), None));
        assert_eq!(gc.start, StartLaw::State(0));
        let osband = find("RiverSwim-Osband").unwrap().facts().unwrap();
        assert_eq!((osband.horizon, osband.start.clone()), (Some(20), StartLaw::State(0)));
        let strehl = find("RiverSwim-Strehl").unwrap().facts().unwrap();
        assert!(matches!(strehl.start, StartLaw::Law(_)), "{:?}", strehl.start);
        let car = find("mountain-car").unwrap().facts().unwrap();
        assert_eq!((car.n_states, car.start, car.discount), (None, StartLaw::Simulator, Some(0.99)));
        for spec in all() {
            let facts = spec.facts().unwrap();
            assert!(facts.reward_range.0 <= facts.reward_range.1, "{}", spec.name);
            assert_eq!(spec.priors().is_empty(), spec.test_distribution().is_none(), "{}", spec.name);
        }
    }
}
