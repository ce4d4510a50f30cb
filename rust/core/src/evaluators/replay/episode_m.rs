//! M for per-episode rejection sampling: a bound on the ratio pi_b(e) / pi_e(e) of *every*
//! episode that could be proposed, computed before the episode is seen (a bound that looked at the
//! proposal would bias the acceptance).
//!
//! With per-step ratios r(s, a) (pi_b / pi_e, or 1 / pi_e when pi_b is only known to be <= 1) and
//! any state possibly following any other (the transition support is not known), the bound over
//! episodes of at most `H` steps is a backward recursion over steps:
//! `M_H(s) = 1`, `M_t(s) = max_a r(s, a) * max_{s'} V_{t+1}(s')`, where `V_{t+1}(s')` is 1 if
//! the episode can end on reaching `s'` (the start state under return-to-start; any state under a
//! terminal flag, where going on is also possible) and `M_{t+1}(s')` otherwise; M = `M_0(start)`.

use super::EpisodeEnd;
use crate::error::Result;
use crate::invalid;

/// How PERS obtains M.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MBound {
    /// The recursion on the agent's revealed policy at the start of the episode (tightest). Valid
    /// only for agents whose policy does not change within an episode (episodic PSRL, Random):
    /// the evaluator checks this at every step and refuses otherwise.
    Policy,
    /// The product over steps of the largest per-step ratio of that policy: looser, same validity.
    PerStep,
    /// The recursion with pi_b bounded by 1: `1 / min_e pi_e(e)`, valid for every agent and fixed
    /// for the whole run (fixed-M PERS).
    Logging,
    /// A fixed M given by the user, checked against every proposal.
    Fixed(f64),
}

impl MBound {
    /// Whether M stays the same for the whole run (acceptances are then Binomial(N, 1/M)).
    pub fn is_fixed(self) -> bool {
        matches!(self, MBound::Logging | MBound::Fixed(_))
    }
}

impl std::str::FromStr for MBound {
    type Err = crate::error::BbrlError;

    /// `"policy"`, `"per_step"` or `"logging"` (a fixed value goes through `Fixed`).
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "policy" => Ok(MBound::Policy),
            "per_step" => Ok(MBound::PerStep),
            "logging" => Ok(MBound::Logging),
            other => Err(invalid!("m must be 'policy', 'per_step', 'logging' or a number >= 1, got '{other}'")),
        }
    }
}

/// The recursion of the module doc: `state_max[s] = max_a r(s, a)`, episodes of at most
/// `horizon` steps from `start`. `work` holds two rows of `n_states` (no allocation per call).
pub fn episode_bound(state_max: &[f64], start: usize, end: EpisodeEnd, horizon: usize, work: &mut Vec<f64>) -> f64 {
    let n = state_max.len();
    work.clear();
    work.resize(n, 1.0); // M_H
    for _ in 0..horizon {
        // max over successors of V_{t+1}.
        let mut best: f64 = 0.0;
        for (s, &m) in work.iter().enumerate() {
            let v = match end {
                EpisodeEnd::ReturnToStart if s == start => 1.0,
                EpisodeEnd::Terminal => m.max(1.0),
                _ => m,
            };
            best = best.max(v);
        }
        for (m, &r) in work.iter_mut().zip(state_max) {
            *m = r * best;
        }
    }
    work[start]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m_rules_parse_by_name() {
        assert_eq!("per_step".parse::<MBound>().unwrap(), MBound::PerStep);
        let e = "fixed".parse::<MBound>().unwrap_err().to_string();
        assert!(e.contains("'policy', 'per_step', 'logging'"), "{e}");
    }

    #[test]
    fn uniform_logging_and_a_deterministic_candidate_give_a_to_the_horizon() {
        // 1 / pi_e = 2 everywhere (two actions, uniform): M = 2^H (SPEC: RiverSwim gives 2^20).
        let mut work = Vec::new();
        assert_eq!(episode_bound(&[2.0; 6], 0, EpisodeEnd::Horizon(20), 20, &mut work), (1u64 << 20) as f64);
        // The candidate equal to the logging policy: every ratio is 1, so M = 1.
        assert_eq!(episode_bound(&[1.0; 6], 0, EpisodeEnd::ReturnToStart, 50, &mut work), 1.0);
        // Return to start with a single state: every episode has one step.
        assert_eq!(episode_bound(&[3.0], 0, EpisodeEnd::ReturnToStart, 10, &mut work), 3.0);
    }
}
